"""What the `.pth` hook installed by `make install` runs at interpreter start-up in
processes under the library (LD_PRELOAD names libpyprof): nothing but a finder placed
first in sys.meta_path that waits for `osprofiler.drivers.base`.  When the program imports
it, the finder lets the normal import run, then imports pyprof.osprofiler_driver, whose
class is then among the Driver subclasses osprofiler.drivers.base.get_driver looks
through: a program configured with the connection string `pyprof://` gets the driver
without a change to its code.  The finder then takes itself out of sys.meta_path.  A
program that never imports OSProfiler only pays a name comparison per import, and no
module is imported on its behalf.  Python 3 only (OSProfiler's releases are); on 2.7
install() does nothing.  Never raises.
"""

import sys

_TARGET = "osprofiler.drivers.base"


def _register():
    try:
        __import__("pyprof.osprofiler_driver")
    except Exception:
        pass


class _Loader(object):
    """The real loader of osprofiler.drivers.base, which registers the driver once the
    module has run; the module is then given back its own loader."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create else None

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            module.__loader__ = self._loader
            module.__spec__.loader = self._loader
        except Exception:
            pass
        _register()


class _Finder(object):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != _TARGET:
            return None
        try:
            _uninstall()
            spec = None
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                if find is not None:
                    spec = find(fullname, path, target)
                    if spec is not None:
                        break
            if spec is None or not hasattr(spec.loader, "exec_module"):
                return spec
            spec.loader = _Loader(spec.loader)
            return spec
        except Exception:
            return None


_finder = _Finder()


def _uninstall():
    try:
        sys.meta_path.remove(_finder)
    except ValueError:
        pass


def install():
    """Registers the driver now if OSProfiler's drivers are already imported, else when
    they are."""
    try:
        if sys.version_info[0] < 3:
            return
        if _TARGET in sys.modules:
            _register()
        elif _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)
    except Exception:
        pass
