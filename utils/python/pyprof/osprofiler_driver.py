"""OSProfiler's `pyprof://` driver: trace points recorded as pyprof spans.

With the connection string `pyprof://` (oslo.config's [profiler] connection_string, or
osprofiler.notifier.create("pyprof://")), every OSProfiler trace point of the process
becomes a span in its pyprof log: a "NAME-start" notification starts span NAME on the
calling thread with OSProfiler's trace_id, parent_id and base_id, and the "NAME-stop" of
the same trace_id ends it (with any span still open inside it).  The span's info is the
notification's info (the host, the traced function's name and arguments, the request, the
SQL statement...) with the driver's project and service set over it: the keys `project`,
`service` and `host` (OSProfiler's own, from its profiler) are what `pyprof trace show`
reports for the span, as OSProfiler's report does.  Spans started with
pyprof.span() nest with them on the same thread.  Traces that cross processes (the
WsgiMiddleware's X-Trace-Info header carries base_id and the caller's trace_id) join by
those ids in the logs of the processes involved.

OSProfiler finds a driver among the subclasses of osprofiler.drivers.base.Driver by the
scheme of the connection string (get_name()), so this module only has to be imported
before the notifier is created: by the program (`import pyprof.osprofiler_driver`), or by
the `.pth` hook `make install` puts in Debian python3's dist-packages (pyprof.autoload),
which imports it as soon as the program imports OSProfiler, in processes run under the
library only.  Without the library the driver records nothing (pyprof's calls are
no-ops).  Reading traces back (get_report, list_traces) is not this driver's: the spans
are in pyprof's logs, read with the pyprof tool.
"""

import sys

import pyprof

try:
    base = sys.modules["osprofiler.drivers.base"]
    base.Driver
except (KeyError, AttributeError):
    from osprofiler.drivers import base


class PyprofDriver(base.Driver):
    """The `pyprof://` driver: each notification goes into this process's pyprof log."""

    def __init__(self, connection_str, project=None, service=None, host=None, **kwargs):
        super(PyprofDriver, self).__init__(connection_str, project=project,
                                           service=service, host=host, **kwargs)
        self._extra = dict((k, v) for k, v in (("project", project), ("service", service))
                           if v is not None)

    @classmethod
    def get_name(cls):
        return "pyprof"

    def notify(self, info, **kwargs):
        """A trace point: "NAME-start" starts a span, "NAME-stop" ends the one of the same
        trace_id on this thread.  Never raises into the traced program."""
        try:
            name = info.get("name") or ""
            if name.endswith("-start"):
                # The driver's project and service win, as in OSProfiler's own drivers
                # (which set them on the notification over whatever it carries).
                extra = dict(info.get("info") or {})
                extra.update(self._extra)
                pyprof._start_traced(name[:-len("-start")], extra, info.get("trace_id"),
                                     info.get("parent_id"), info.get("base_id"))
            elif name.endswith("-stop"):
                pyprof._stop_traced(info.get("trace_id"), info.get("info"))
        except Exception:
            pass

    def get_report(self, base_id):
        raise NotImplementedError("pyprof://: the trace points are spans in pyprof's logs; "
                                  "read them with `pyprof trace show %s DIR`" % base_id)
