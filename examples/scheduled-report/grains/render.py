"""Turn the figures into the report's text, and keep the latest report in the data layer."""


def handle(event, context):
    average = event["revenue"] / event["orders"] if event["orders"] else 0
    text = (
        f"Orders {event['period']}: {event['orders']}, revenue {event['revenue']:.2f}, "
        f"average {average:.2f}"
    )
    context.data.put("reports/latest", text)
    context.logger.info("report: %s", text)
    return {"report": text}
