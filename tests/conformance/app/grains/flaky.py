"""Fails the first event["failures"] calls for event["key"], counting in the context's data.

``context.data`` is the application's data layer (``get``/``put``) under the emulator and
the cluster, and a plain dict shared by one run's calls in the in-process driver.
"""


class Flaky(Exception):
    """Raised while the failure budget lasts."""


def handle(event, context):
    key = f"flaky:{event['key']}:{context.execution_id}"
    data = context.data
    if isinstance(data, dict):
        count = data.get(key, 0)
        data[key] = count + 1
    else:
        count = int(data.get(key) or 0)
        data.put(key, str(count + 1))
    if count < event["failures"]:
        raise Flaky(f"call {count + 1} fails")
    return {"calls": count + 1}
