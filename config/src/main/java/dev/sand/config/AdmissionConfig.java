package dev.sand.config;

import dev.sand.contracts.contractsConstants;

/**
 * How much work a host takes before it refuses more ({@code admission}; decision 0023): the events
 * queued on its local bus and not yet taken by a grain instance, per application and in total.
 * Beyond either bound a frontend answers an invocation 429 with {@code Retry-After}.
 *
 * @param maxQueuedPerApp the most events of one application waiting in its grains' queues on one
 *     host ({@code admission.max_queued_per_app}), 1..{@link #MAX_QUEUED}
 * @param maxQueuedPerHost the most events of all applications waiting on one host ({@code
 *     admission.max_queued_per_host}), at least {@code maxQueuedPerApp}, at most {@link
 *     #MAX_QUEUED}
 * @param retryAfterS what a refusal's {@code Retry-After} says, in seconds ({@code
 *     admission.retry_after_s}), 1..{@link #MAX_RETRY_AFTER_S}
 * @param adaptive whether the per-app bound also follows the app's latency ({@code
 *     admission.adaptive}; decision 0032): below {@code maxQueuedPerApp} while its synchronous
 *     calls take longer than unloaded
 */
public record AdmissionConfig(
    int maxQueuedPerApp, int maxQueuedPerHost, int retryAfterS, boolean adaptive) {
  /** The largest bound accepted: beyond it a queue is a backlog of minutes, not a buffer. */
  public static final int MAX_QUEUED = contractsConstants.CONFIG_MAX_QUEUED;

  /** The longest {@code Retry-After} accepted: an hour. */
  public static final int MAX_RETRY_AFTER_S = contractsConstants.CONFIG_MAX_RETRY_AFTER_S;

  /** What a config without the section gets: the committed defaults of {@code defaults.toml}. */
  public static final AdmissionConfig DEFAULT = new AdmissionConfig(32, 128, 1, false);

  public AdmissionConfig {
    if (maxQueuedPerApp < 1 || maxQueuedPerApp > MAX_QUEUED) {
      throw ConfigException.invalid(
          "max_queued_per_app", "must be 1.." + MAX_QUEUED + ", got " + maxQueuedPerApp);
    }
    if (maxQueuedPerHost < maxQueuedPerApp || maxQueuedPerHost > MAX_QUEUED) {
      throw ConfigException.invalid(
          "max_queued_per_host",
          "must be max_queued_per_app ("
              + maxQueuedPerApp
              + ").."
              + MAX_QUEUED
              + ", got "
              + maxQueuedPerHost);
    }
    if (retryAfterS < 1 || retryAfterS > MAX_RETRY_AFTER_S) {
      throw ConfigException.invalid(
          "retry_after_s", "must be 1.." + MAX_RETRY_AFTER_S + ", got " + retryAfterS);
    }
  }
}
