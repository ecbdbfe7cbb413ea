package dev.sand.contracts;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;

/**
 * The result document of an execution ({@code ExecutionResult} in contracts.thrift): the JSON at
 * {@code sand:result:<execution>}, the payload of RESULT/ERROR events and the body of {@code GET
 * /v1/executions/{id}}. JSON keys are the IDL's field names, taken from the generated code; the
 * Python side ({@code sand.contracts.result_document}) writes the same document.
 *
 * @param executionId the execution
 * @param app its application
 * @param workflow its workflow
 * @param status where it is
 * @param startedMs epoch ms when it was accepted, or 0 when not known
 * @param finishedMs epoch ms when it ended, or 0 while RUNNING
 * @param output the output when SUCCEEDED, else null
 * @param error the error name when FAILED, else null
 * @param cause why it failed when FAILED, else null
 * @param trace per-grain spans when the invocation asked for them, else null
 * @param input the execution's input when known (from its record), else null
 * @param name the client-chosen name of an idempotent start, else null
 * @param redriveCount how many times it was redriven (0: never)
 */
public record ResultDocument(
    String executionId,
    String app,
    String workflow,
    ExecutionStatus status,
    long startedMs,
    long finishedMs,
    JsonNode output,
    String error,
    String cause,
    JsonNode trace,
    JsonNode input,
    String name,
    int redriveCount) {

  /** How long a result document stays in Redis. */
  public static final Duration TTL = Duration.ofSeconds(contractsConstants.RESULT_TTL_S);

  private static final ObjectMapper MAPPER = new ObjectMapper();

  /** Validates the combination of status and fields. */
  public ResultDocument {
    Names.requireExecutionId(executionId);
    if (status == null) {
      throw new IllegalArgumentException("execution '" + executionId + "': status is missing");
    }
    if ((status == ExecutionStatus.FAILED || status == ExecutionStatus.ABORTED)
        && (error == null || error.isEmpty())) {
      throw new IllegalArgumentException(
          "execution '" + executionId + "': a " + status + " result needs an error name");
    }
  }

  /** A document without input, name or redrive count. */
  public ResultDocument(
      String executionId,
      String app,
      String workflow,
      ExecutionStatus status,
      long startedMs,
      long finishedMs,
      JsonNode output,
      String error,
      String cause,
      JsonNode trace) {
    this(
        executionId,
        app,
        workflow,
        status,
        startedMs,
        finishedMs,
        output,
        error,
        cause,
        trace,
        null,
        null,
        0);
  }

  /** The document of an execution accepted at {@code startedMs}. */
  public static ResultDocument running(
      String executionId, String app, String workflow, long startedMs) {
    return new ResultDocument(
        executionId, app, workflow, ExecutionStatus.RUNNING, startedMs, 0, null, null, null, null);
  }

  /** The document of an execution that ended at {@code finishedMs} with {@code error}. */
  public static ResultDocument failed(
      String executionId,
      String app,
      String workflow,
      long finishedMs,
      String error,
      String cause) {
    return new ResultDocument(
        executionId,
        app,
        workflow,
        ExecutionStatus.FAILED,
        0,
        finishedMs,
        null,
        error,
        cause == null ? "" : cause,
        null);
  }

  /** Whether the execution has ended (SUCCEEDED, FAILED or ABORTED). */
  public boolean finished() {
    return status != ExecutionStatus.RUNNING;
  }

  /** The document as JSON; unset fields are absent. */
  public ObjectNode toJson() {
    ObjectNode doc = MAPPER.createObjectNode();
    doc.put(field(ExecutionResult._Fields.EXECUTION_ID), executionId);
    if (app != null) {
      doc.put(field(ExecutionResult._Fields.APP), app);
    }
    if (workflow != null) {
      doc.put(field(ExecutionResult._Fields.WORKFLOW), workflow);
    }
    doc.put(field(ExecutionResult._Fields.STATUS), status.name());
    if (startedMs > 0) {
      doc.put(field(ExecutionResult._Fields.STARTED_MS), startedMs);
    }
    if (finishedMs > 0) {
      doc.put(field(ExecutionResult._Fields.FINISHED_MS), finishedMs);
    }
    if (output != null) {
      doc.set(field(ExecutionResult._Fields.OUTPUT), output);
    }
    if (error != null) {
      doc.put(field(ExecutionResult._Fields.ERROR), error);
      doc.put(field(ExecutionResult._Fields.CAUSE), cause);
    }
    if (trace != null) {
      doc.set(field(ExecutionResult._Fields.TRACE), trace);
    }
    if (input != null) {
      doc.set(field(ExecutionResult._Fields.INPUT), input);
    }
    if (name != null) {
      doc.put(field(ExecutionResult._Fields.NAME), name);
    }
    if (redriveCount > 0) {
      doc.put(field(ExecutionResult._Fields.REDRIVE_COUNT), redriveCount);
    }
    return doc;
  }

  /** The document as UTF-8 JSON bytes. */
  public byte[] toBytes() {
    try {
      return MAPPER.writeValueAsBytes(toJson());
    } catch (JacksonException e) {
      throw new IllegalStateException("a JSON tree always serializes", e);
    }
  }

  /**
   * Reads a document written by either language.
   *
   * @throws IllegalArgumentException naming the problem when {@code json} is not a result document
   */
  public static ResultDocument parse(byte[] json) {
    JsonNode doc;
    try {
      doc = MAPPER.readTree(json);
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("result document is not JSON: " + e.getMessage(), e);
    }
    if (doc == null || !doc.isObject()) {
      throw new IllegalArgumentException("result document is not a JSON object");
    }
    String status = text(doc, ExecutionResult._Fields.STATUS);
    ExecutionStatus parsed;
    try {
      parsed = ExecutionStatus.valueOf(status == null ? "" : status);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "result document: status must be one of RUNNING, SUCCEEDED, FAILED, ABORTED, got '"
              + status
              + "'",
          e);
    }
    return new ResultDocument(
        text(doc, ExecutionResult._Fields.EXECUTION_ID),
        text(doc, ExecutionResult._Fields.APP),
        text(doc, ExecutionResult._Fields.WORKFLOW),
        parsed,
        doc.path(field(ExecutionResult._Fields.STARTED_MS)).asLong(0),
        doc.path(field(ExecutionResult._Fields.FINISHED_MS)).asLong(0),
        doc.get(field(ExecutionResult._Fields.OUTPUT)),
        text(doc, ExecutionResult._Fields.ERROR),
        text(doc, ExecutionResult._Fields.CAUSE),
        doc.get(field(ExecutionResult._Fields.TRACE)),
        doc.get(field(ExecutionResult._Fields.INPUT)),
        text(doc, ExecutionResult._Fields.NAME),
        doc.path(field(ExecutionResult._Fields.REDRIVE_COUNT)).asInt(0));
  }

  private static String text(JsonNode doc, ExecutionResult._Fields field) {
    JsonNode node = doc.get(field(field));
    return node == null || node.isNull() ? null : node.asText();
  }

  private static String field(ExecutionResult._Fields field) {
    return field.getFieldName();
  }
}
