package dev.sand.contracts;

import java.util.regex.Pattern;

/**
 * The {@code error} label of a failure in the metrics (decision 0019): the rule of {@code
 * contracts.thrift}'s {@code METRIC_ERROR_*}, which the grain worker ({@code
 * sand.contracts.metric_error_label}) applies as it counts and the host agent again as it reads.
 * Both run the cases of {@code contract-cases.json}.
 */
public final class MetricLabels {
  /** The label of an error type that is not a plain name, or of none. */
  public static final String OTHER_ERROR = contractsConstants.METRIC_ERROR_OTHER;

  private static final Pattern ERROR_NAME = Pattern.compile(contractsConstants.METRIC_ERROR_NAME);

  private MetricLabels() {}

  /** The label a failure of type {@code error} counts under: itself if a plain name, else Other. */
  public static String error(String error) {
    return error != null && ERROR_NAME.matcher(error).matches() ? error : OTHER_ERROR;
  }
}
