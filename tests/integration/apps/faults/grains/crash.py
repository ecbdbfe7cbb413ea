"""Fails as the input asks: raise, run past the deadline, exit, segfault, or return too much
(or prints, logs, or sleeps and succeeds)."""

import os
import signal
import time

# Events this process has served: 1 always, unless the app opts in to reuse.
served = 0


def handle(event, context):
    global served
    served += 1
    how = event.get("how")
    if how == "raise":
        raise KeyError("no such thing: " + str(event.get("what")))
    if how == "sleep":
        time.sleep(float(event.get("seconds", 60)))
    if how == "exit":
        os._exit(int(event.get("status", 3)))
    if how == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if how == "big":
        return {"blob": "x" * int(event.get("bytes", 100_000))}
    if how == "print":
        print(event.get("text"))
    if how == "log":
        context.logger.info(event.get("text"))
        context.logger.debug("below the default level")
    if how == "slow-ok":
        time.sleep(float(event.get("seconds", 1)))
    return {"ok": True, "attempt_pid": os.getpid(), "served": served}
