"""Shared by the OSProfiler workloads of test_spans_osprofiler.py: OSProfiler set up
the way a service does it, from configuration (osprofiler.initializer.init_from_conf),
with the connection string pyprof:// and the HMAC key the processes share.  The options
are those of the [profiler] section OSProfiler's init_from_conf reads: 3.x's
(connection_string, hmac_keys) and 4.x's (trace_requests as well, off: the client's
urllib call is no `requests` call anyway)."""

from osprofiler import initializer


class _Section(object):
    connection_string = "pyprof://"
    hmac_keys = "secret-key"
    enabled = True
    trace_requests = False


class _Conf(dict):
    """What a service's oslo.config object offers: attributes and a mapping."""

    def __init__(self):
        dict.__init__(self, profiler=_Section())
        self.profiler = self["profiler"]


def init(project, service, host):
    initializer.init_from_conf(_Conf(), {}, project, service, host)
