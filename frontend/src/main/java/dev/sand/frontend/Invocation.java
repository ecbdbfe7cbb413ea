package dev.sand.frontend;

import dev.sand.contracts.Names;
import java.util.Objects;

/**
 * One accepted invocation, ready to be queued.
 *
 * @param executionId 32 lowercase hex digits (a UUID without dashes); the correlation id
 * @param app the application
 * @param workflow the workflow to run
 * @param entryGrain the grain that receives the INVOKE event ({@code workflows[W].entry_grain})
 * @param input the input document, compact UTF-8 JSON
 * @param sync whether this frontend waits for the result (sets {@code reply_to})
 * @param viaKafka whether the event enters through the global bus (the entry grain's topic) instead
 *     of the local bus
 * @param trace whether the caller asked for per-grain timing
 * @param backups whether the app's events are backed up to the global bus
 * @param headers more headers of the INVOKE event (a redrive's, a named start's {@code sand-name};
 *     decision 0018)
 */
record Invocation(
    String executionId,
    String app,
    String workflow,
    String entryGrain,
    byte[] input,
    boolean sync,
    boolean viaKafka,
    boolean trace,
    boolean backups,
    java.util.Map<String, String> headers) {
  Invocation {
    Names.requireExecutionId(executionId);
    Names.requireApp(app);
    Objects.requireNonNull(workflow, "workflow");
    Names.requireGrain(entryGrain);
    Objects.requireNonNull(input, "input");
    headers = java.util.Map.copyOf(headers);
  }

  /** The client-chosen name of an idempotent start ({@code ?name=}), or null. */
  String name() {
    return headers.get(ExecutionNames.NAME_HEADER);
  }
}
