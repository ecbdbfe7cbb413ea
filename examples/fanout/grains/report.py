"""Join: merge the three statistics into one report."""


def handle(event, context):
    # A join receives the list of its predecessors' outputs.
    report = {}
    for part in event:
        stat = part.pop("stat")
        report[stat] = part
    context.logger.info("report of %d parts", len(event))
    return report
