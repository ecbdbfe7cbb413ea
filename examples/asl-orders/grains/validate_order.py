"""Refuse orders without lines or with a non-positive quantity."""


class InvalidOrder(Exception):
    """The order cannot be processed as sent."""


def handle(event, context):
    items = event.get("items")
    if not items:
        raise InvalidOrder(f"order {event.get('order_id')} has no items")
    for index, item in enumerate(items):
        if not isinstance(item.get("qty"), int) or item["qty"] <= 0:
            raise InvalidOrder(f"item {index} ({item.get('sku')}): qty must be a positive integer")
    return event
