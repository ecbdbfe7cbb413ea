"""Build the greeting and count greetings per name in the data layer."""


def handle(event, context):
    name = event["name"]
    key = f"greetings/{name}"
    count = context.data.get(key, 0) + 1
    context.data.put(key, count)
    return {"name": name, "greeting": f"Hello, {name}", "times_greeted": count}
