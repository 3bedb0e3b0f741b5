"""``kurahi doctor``: what a user needs to know about this installation, each problem with its fix.

:func:`run_doctor` asks every question in turn (see :mod:`kurahi.doctor.install` and
:mod:`kurahi.doctor.state`) and never changes anything; the command prints the report and
exits 1 when a check fails.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from kurahi.doctor.report import Check, DoctorReport, Status

__all__ = ["Check", "DoctorReport", "Status", "run_doctor"]


def run_doctor(home: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> DoctorReport:
    """Check the installation and the state directories it would use.

    Args:
        home: the ``--home`` option, if given.
        env: the environment to read the locations from (default: this process's).
    """
    from kurahi.doctor.gateway import check_gateway
    from kurahi.doctor.install import check_extras, check_native, check_version
    from kurahi.doctor.state import check_disk, check_home, check_runtime, check_secrets
    from kurahi.errors import UsageError
    from kurahi.locations.dirs import kurahi_home
    from kurahi.runtimes.registry import RUNTIMES

    checks = [check_version(), check_native(), check_extras()]
    try:
        where = kurahi_home(home, env)
    except UsageError as exc:
        checks.append(Check("home", "fail", str(exc), fix="unset KOLO_HOME or KURAHI_HOME, or pass --home"))
    else:
        checks.append(check_home(where))
        checks.append(check_secrets(where.path))
        if where.path.is_dir():
            checks.append(check_gateway(where.path))
        checks.append(check_disk(where.path))
    checks.extend(check_runtime(runtime, runtime.locate(env)) for runtime in RUNTIMES)
    return DoctorReport(checks)
