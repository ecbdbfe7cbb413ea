package dev.sand.contracts;

import java.util.Optional;

/**
 * Who a request is made for (decision 0017): a user with a role, signed in with one of their
 * tokens, or the system itself (the cluster's own tools, holding the agents' secret).
 *
 * @param user the user name ({@link Names#requireUser}); {@code null} for the system
 * @param admin whether the caller has the admin role (always for the system)
 * @param tokenId the id of the token used, or {@code null} for the system
 */
public record Caller(String user, boolean admin, String tokenId) {
  /** The cluster's own tools: admin, no user. */
  public static final Caller SYSTEM = new Caller(null, true, null);

  public Caller {
    if (user != null) {
      Names.requireUser(user);
    }
  }

  /** A signed-in user with the role named {@code role} ({@code admin} or {@code user}). */
  public static Caller of(String user, String role, String tokenId) {
    return new Caller(Names.requireUser(user), isAdmin(role), tokenId);
  }

  /**
   * Whether {@code role} is the admin role.
   *
   * @throws IllegalArgumentException naming the value when it is neither role
   */
  public static boolean isAdmin(String role) {
    if (contractsConstants.ROLE_ADMIN.equals(role)) {
      return true;
    }
    if (contractsConstants.ROLE_USER.equals(role)) {
      return false;
    }
    throw new IllegalArgumentException(
        "role must be '"
            + contractsConstants.ROLE_ADMIN
            + "' or '"
            + contractsConstants.ROLE_USER
            + "', got '"
            + role
            + "'");
  }

  /** This caller's role name. */
  public String role() {
    return admin ? contractsConstants.ROLE_ADMIN : contractsConstants.ROLE_USER;
  }

  /**
   * Whether this caller may see and act on what {@code owner} owns: admins on everything, a user on
   * their own. Something without an owner (deployed before users existed) is the admins'.
   */
  public boolean mayUse(Optional<String> owner) {
    return admin || (user != null && owner.isPresent() && owner.get().equals(user));
  }
}
