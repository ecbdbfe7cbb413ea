"""Clean up the name: trim it and capitalise each word."""


def handle(event, context):
    name = " ".join(part.capitalize() for part in str(event.get("name", "")).split())
    if not name:
        raise ValueError("the input needs a non-empty 'name'")
    context.logger.info("normalized %r to %r", event.get("name"), name)
    return {"name": name}
