package dev.sand.agent;

/** A dependency switched off by configuration; health reports it with the reason. */
record Disabled(String name, String disabledReason) implements Dependency {
  @Override
  public boolean enabled() {
    return false;
  }

  @Override
  public String open() {
    throw new IllegalStateException(name + " is disabled: " + disabledReason);
  }

  @Override
  public String ping() {
    throw new IllegalStateException(name + " is disabled: " + disabledReason);
  }

  @Override
  public void close() {}
}
