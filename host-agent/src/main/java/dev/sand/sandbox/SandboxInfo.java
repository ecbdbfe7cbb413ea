package dev.sand.sandbox;

/**
 * A sandbox as the backend reports it.
 *
 * @param id the backend's id
 * @param app the application label, or "" when the sandbox has none
 * @param state the backend's state word (Docker: created, running, exited, ...)
 */
public record SandboxInfo(SandboxId id, String app, String state) {}
