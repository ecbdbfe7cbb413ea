package dev.sand.agent.triggers;

import com.cronutils.model.CronType;
import com.cronutils.model.definition.CronDefinitionBuilder;
import com.cronutils.model.time.ExecutionTime;
import com.cronutils.parser.CronParser;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * When a schedule trigger fires (decision 0034): {@code rate(N unit)}, every N minutes, hours or
 * days counted from the Unix epoch in UTC; or {@code cron(F)} with five Unix fields (minute hour
 * day-of-month month day-of-week) in a time zone, read by cron-utils. The Python validator ({@code
 * sand.triggers}) refuses at deploy what this class would; both are held to the same known-answer
 * vectors ({@code tests/vectors/schedules.json}). Immutable.
 */
public final class Schedule {
  private static final Pattern RATE =
      Pattern.compile("rate\\(\\s*(\\d{1,9})\\s+(minute|minutes|hour|hours|day|days)\\s*\\)");
  private static final Pattern CRON = Pattern.compile("cron\\(\\s*(.+?)\\s*\\)");
  // wider than any change of a zone's offset: where a walk in wall-clock time starts
  private static final java.time.Duration WINDOW = java.time.Duration.ofHours(3);
  // one item of a field's list: *, */n, v, v-v, v-v/n (v a number or a name)
  private static final Pattern ITEM = Pattern.compile("\\*(?:/\\d+)?|\\w+(?:-\\w+(?:/\\d+)?)?");
  private static final CronParser UNIX =
      new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.UNIX));

  private final String expression;
  private final long periodSeconds; // a rate's; 0 for cron
  private final ExecutionTime cron;
  private final ZoneId zone;
  private final boolean fixedTime;

  private Schedule(
      String expression, long periodSeconds, ExecutionTime cron, ZoneId zone, boolean fixedTime) {
    this.expression = expression;
    this.periodSeconds = periodSeconds;
    this.cron = cron;
    this.zone = zone;
    this.fixedTime = fixedTime;
  }

  /**
   * The schedule of {@code expression} in {@code timezone} (an IANA zone; only cron uses it).
   *
   * @throws IllegalArgumentException naming the value and the rule broken
   */
  public static Schedule parse(String expression, String timezone) {
    ZoneId zone;
    try {
      zone = ZoneId.of(timezone == null ? "UTC" : timezone);
    } catch (DateTimeException e) {
      throw new IllegalArgumentException("timezone: unknown time zone '" + timezone + "'", e);
    }
    Matcher rate = RATE.matcher(expression == null ? "" : expression);
    if (rate.matches()) {
      long n = Long.parseLong(rate.group(1));
      if (n < 1) {
        throw new IllegalArgumentException("schedule: a rate must be at least 1, got " + n);
      }
      long unit =
          switch (rate.group(2).toLowerCase(Locale.ROOT)) {
            case "minute", "minutes" -> 60;
            case "hour", "hours" -> 3600;
            default -> 86_400;
          };
      if (!zone.equals(ZoneId.of("UTC"))) {
        throw new IllegalArgumentException(
            "timezone: applies to cron schedules only (a rate counts from the epoch in UTC), got '"
                + timezone
                + "'");
      }
      return new Schedule(expression, n * unit, null, zone, true);
    }
    Matcher cron = CRON.matcher(expression == null ? "" : expression);
    if (!cron.matches()) {
      throw new IllegalArgumentException(
          "schedule: must be rate(N minutes|hours|days) or cron(5 fields), got '"
              + expression
              + "'");
    }
    String fields = cron.group(1);
    String[] parts = fields.split("\\s+");
    if (parts.length != 5) {
      throw new IllegalArgumentException(
          "schedule: SAND's cron has 5 fields (minute hour day-of-month month day-of-week), got '"
              + fields
              + "'");
    }
    for (String part : parts) {
      for (String item : part.split(",", -1)) {
        if (!ITEM.matcher(item).matches()) {
          throw new IllegalArgumentException(
              "schedule: '"
                  + item
                  + "' in '"
                  + expression
                  + "' is not *, */n, a value, a-b or a-b/n");
        }
      }
    }
    try {
      ExecutionTime time = ExecutionTime.forCron(UNIX.parse(fields).validate());
      if (time.nextExecution(ZonedDateTime.of(2000, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC)).isEmpty()) {
        throw new IllegalArgumentException("it never fires");
      }
      return new Schedule(
          expression, 0, time, zone, !parts[0].startsWith("*") && !parts[1].startsWith("*"));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "schedule: '" + expression + "' is not a valid cron expression: " + e.getMessage(), e);
    }
  }

  /** The expression as written. */
  public String expression() {
    return expression;
  }

  /** The latest firing at or before {@code at} (second precision), if there is one. */
  public Optional<Instant> latestAtOrBefore(Instant at) {
    Instant t = at.truncatedTo(ChronoUnit.SECONDS);
    if (cron == null) {
      long s = t.getEpochSecond();
      return Optional.of(Instant.ofEpochSecond(Math.floorDiv(s, periodSeconds) * periodSeconds));
    }
    // walk back in wall-clock time from past every offset change that could matter; the
    // latest instant at or before t wins (a repeated hour maps back in time)
    ZonedDateTime wall = wall(t).plus(WINDOW);
    Instant best = null;
    while (true) {
      Optional<ZonedDateTime> previous = cron.lastExecution(wall);
      if (previous.isEmpty()) {
        return Optional.ofNullable(best);
      }
      wall = previous.get();
      List<Instant> instants = instants(wall.toLocalDateTime());
      if (best != null && latest(wall.toLocalDateTime()).isBefore(best)) {
        return Optional.of(best);
      }
      for (Instant i : instants) {
        if (!i.isAfter(t) && (best == null || i.isAfter(best))) {
          best = i;
        }
      }
    }
  }

  /** The first firing strictly after {@code at}, if there is one. */
  public Optional<Instant> nextAfter(Instant at) {
    Instant t = at.truncatedTo(ChronoUnit.SECONDS);
    if (cron == null) {
      long s = t.getEpochSecond();
      return Optional.of(
          Instant.ofEpochSecond((Math.floorDiv(s, periodSeconds) + 1) * periodSeconds));
    }
    ZonedDateTime wall = wall(t).minus(WINDOW);
    Instant best = null;
    while (true) {
      Optional<ZonedDateTime> next = cron.nextExecution(wall);
      if (next.isEmpty()) {
        return Optional.ofNullable(best);
      }
      wall = next.get();
      if (best != null && earliest(wall.toLocalDateTime()).isAfter(best)) {
        return Optional.of(best);
      }
      for (Instant i : instants(wall.toLocalDateTime())) {
        if (i.isAfter(t) && (best == null || i.isBefore(best))) {
          best = i;
        }
      }
    }
  }

  /** The wall-clock time of {@code t} in the zone, as cron-utils reads it (in UTC). */
  private ZonedDateTime wall(Instant t) {
    return LocalDateTime.ofInstant(t, zone).atZone(ZoneOffset.UTC);
  }

  /**
   * The instants a wall-clock time that matches fires at. At a fixed time (neither minute nor hour
   * starts with '*', as Debian's cron and cronsim): once, at the first of a repeated time, at the
   * end of a skipped hour for a time inside it. Otherwise every instant whose wall-clock time
   * matches: both passes of a repeated hour, none in a skipped one.
   */
  private List<Instant> instants(LocalDateTime local) {
    List<ZoneOffset> offsets = zone.getRules().getValidOffsets(local);
    if (fixedTime) {
      return List.of(earliest(local));
    }
    return offsets.stream().map(local::toInstant).sorted().toList();
  }

  private Instant earliest(LocalDateTime local) {
    List<ZoneOffset> offsets = zone.getRules().getValidOffsets(local);
    if (offsets.isEmpty()) {
      return zone.getRules().getTransition(local).getInstant();
    }
    return offsets.stream().map(local::toInstant).min(Instant::compareTo).orElseThrow();
  }

  private Instant latest(LocalDateTime local) {
    List<ZoneOffset> offsets = zone.getRules().getValidOffsets(local);
    if (offsets.isEmpty()) {
      return zone.getRules().getTransition(local).getInstant();
    }
    return offsets.stream().map(local::toInstant).max(Instant::compareTo).orElseThrow();
  }

  @Override
  public String toString() {
    return expression + (cron == null ? "" : " " + zone);
  }
}
