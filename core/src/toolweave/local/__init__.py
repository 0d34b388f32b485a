"""Plugin folders: tools as ``.py`` files in a folder, for teams that publish no pack.

Every ``.py`` file under the folders (``tools/plugins`` in the workspace by default) is
imported; what it marks with :func:`register_tool` joins the registry center (source
``dir:<folder>``, its groups and role whitelist) and every attached session, under its
own name. :meth:`PluginFolders.watch` follows the folders (``watchfiles``, the ``local``
extra): a new file is imported, a changed one reloaded, a deleted one's tools disabled.
A file that fails is skipped with an alert naming the file and line.

Example:
    ```python
    from toolweave.local import BaseLocalTool, PluginFolders, register_tool

    plugins = PluginFolders(["tools/plugins"], center=center)
    plugins.attach(session)
    plugins.load()
    ```

See ``docs/plugin-folders.md``.
"""

from toolweave.local._base import BaseLocalTool
from toolweave.local._folders import (
    DEFAULT_FOLDER,
    ENV_PLUGINS,
    PluginAlert,
    PluginFile,
    PluginFolders,
    PluginTool,
)
from toolweave.local._marks import LocalSpec, register_tool, spec_of

__all__ = [
    "DEFAULT_FOLDER",
    "ENV_PLUGINS",
    "BaseLocalTool",
    "LocalSpec",
    "PluginAlert",
    "PluginFile",
    "PluginFolders",
    "PluginTool",
    "register_tool",
    "spec_of",
]
