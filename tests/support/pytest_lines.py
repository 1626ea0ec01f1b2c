"""pytest_lines -- a pytest plugin that prints the lines tests/run.sh counts.

    python -m pytest -p pytest_lines ...      (tests/support on PYTHONPATH)

Every test prints "PASS <prefix><name>" when it passes and "FAIL
<prefix><name>: <first line of the failure>" when its setup, call or
teardown fails; a skipped test prints "SKIP <prefix><name>: <reason>",
which tests/run.sh does not count.  The prefix is $BERTC_PYTEST_PREFIX
("python/", "triton/", ...), so the names say which suite they come from.
Lines go through pytest's terminal writer, outside output capture.
"""
import os

_config = None


def pytest_configure(config):
    global _config
    _config = config


def _say(line):
    tr = _config.pluginmanager.getplugin("terminalreporter") if _config else None
    if tr is not None:   # on a line of its own, whatever progress output surrounds it
        tr.write("\n")
        tr.write_line(line)
    else:
        print(line, flush=True)


def _why(report):
    text = getattr(report, "longreprtext", "") or str(report.longrepr or "")
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    errs = [l for l in lines if l.startswith("E ")]
    return (errs[0][1:].strip() if errs else lines[-1] if lines else "failed")[:400]


def pytest_runtest_logreport(report):
    name = os.environ.get("BERTC_PYTEST_PREFIX", "") + report.nodeid.split("::", 1)[-1]
    if report.failed:
        _say("FAIL %s: %s%s" % (name, "" if report.when == "call" else "(in %s) " % report.when, _why(report)))
    elif report.skipped and report.when in ("setup", "call"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else "skipped"
        _say("SKIP %s: %s" % (name, reason))
    elif report.when == "call" and report.passed:
        _say("PASS %s" % name)
