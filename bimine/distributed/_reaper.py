"""Run as ``python _reaper.py DRIVER_PID`` (by path: it imports nothing of bimine, only psutil,
which Ray itself needs): ends the local Ray cluster a bimine process started, once that process
is gone, however it died.

Ray ties its head processes (GCS, raylet, workers) to the driver that started them, so they die
with it; but the raylet's two agents (``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``), seeing
the raylet killed rather than stopped, first try to report its death to the GCS, which is gone
too, and wait 60 s for that before they exit (measured after ``kill -9`` of ``bimine embed
--executor ray``: 60-105 s). This watcher keeps the list of the driver's descendants (checked
every 0.5 s while it lives) and kills those still running when the driver is gone. It is a
child of the driver in a session of its own, so the terminal's Ctrl-C does not reach it early.
``psutil.Process`` remembers each process's start time, so a process id reused since is never
touched.
"""

from __future__ import annotations

import os
import sys
import time


def main(driver_pid: int) -> None:
    import psutil

    try:
        driver = psutil.Process(driver_pid)
    except psutil.Error:
        return
    me = os.getpid()
    known: dict[int, psutil.Process] = {}
    while True:
        try:
            if driver.status() == psutil.STATUS_ZOMBIE:
                break
            for p in driver.children(recursive=True):
                if p.pid != me:
                    known.setdefault(p.pid, p)
        except psutil.Error:  # the driver is gone
            break
        time.sleep(0.5)
    for p in known.values():
        try:
            if p.is_running():  # compares the start time too: never a reused pid
                p.kill()
        except psutil.Error:
            pass


if __name__ == "__main__":
    main(int(sys.argv[1]))
