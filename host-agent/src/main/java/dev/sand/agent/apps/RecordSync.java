package dev.sand.agent.apps;

import dev.sand.store.AppRecord;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Brings this host in line with the deployments on record ({@link AppRecords}, decision 0011):
 * deploys what is recorded and not here (or here in an older version), undeploys what this host
 * runs because it was recorded and no longer is. Remembers which apps run here because they are on
 * record and which recorded versions failed here. Thread-safe.
 */
final class RecordSync {
  // the deployer's name: the log lines it wrote before this class existed keep their logger
  private static final Logger LOG = LoggerFactory.getLogger(Deployer.class);

  /** The deployer's steps that a sync takes; each takes the app's lock itself. */
  interface Host {
    /** The version of {@code name} this host knows (running here or placed elsewhere), else 0. */
    int versionHere(String name);

    /** Deploys {@code record} as its own version; throws what a deploy throws. */
    void deploy(AppRecord record, DeployOptions options);

    /** Removes {@code name} from this host, its workflow sources included; may throw. */
    void undeployHere(String name);
  }

  // a recorded version that failed to deploy here is not tried again until a newer one is recorded
  private final Map<String, Integer> failedRestores = new ConcurrentHashMap<>();
  // the apps this host runs because they are on record (so the record's removal undeploys them)
  private final Set<String> recorded = ConcurrentHashMap.newKeySet();
  private final AppRecords records;
  private final AppLog log;
  private final AppRegistry apps;

  /**
   * @param apps the apps deployed here, whose locks serialize the deployer's calls for each
   */
  RecordSync(AppRecords records, AppLog log, AppRegistry apps) {
    this.records = records;
    this.log = log;
    this.apps = apps;
  }

  /** Marks {@code name} as running here because it is on record (or not: {@code onRecord}). */
  void mark(String name, boolean onRecord) {
    if (onRecord) {
      recorded.add(name);
    } else {
      recorded.remove(name);
    }
  }

  /**
   * Records a new deploy of {@code name} for every host; when that fails the app's log says it will
   * not come back after a restart.
   */
  void save(String name, int version, byte[] archive, DeployOptions options, Instant at) {
    Optional<String> why = records.save(name, version, archive, options, at);
    mark(name, why.isEmpty());
    why.ifPresent(
        w -> log.note(name, "not recorded globally (it will not come back after a restart): " + w));
  }

  /**
   * One round of the sync; the apps on record that are placed elsewhere are passed to {@code
   * elsewhere} to keep. Blocking while it deploys; never throws.
   *
   * @return the apps on record, or empty when the record cannot be read (nothing was done)
   */
  Optional<Set<String>> sync(Host host) {
    Optional<Map<String, Integer>> onRecord = records.versions();
    if (onRecord.isEmpty()) {
      return Optional.empty();
    }
    onRecord.get().forEach((name, version) -> syncOne(host, name, version));
    for (String name : List.copyOf(recorded)) {
      if (!onRecord.get().containsKey(name) && apps.contains(name)) {
        undeployIfUnrecorded(host, name);
      }
    }
    return Optional.of(onRecord.get().keySet());
  }

  /**
   * Undeploys {@code name} here if the record, read again under the app's lock, confirms it is
   * gone. The read at the start of {@link #sync} may predate a deploy through this host (an
   * undeploy and a deploy of the same name in quick succession): that deploy holds the lock until
   * its record is saved, so the second read sees it and the new deployment is left alone.
   */
  private void undeployIfUnrecorded(Host host, String name) {
    synchronized (apps.lockOf(name)) {
      Optional<Map<String, Integer>> now = records.versions();
      if (now.isEmpty() || now.get().containsKey(name) || !recorded.contains(name)) {
        return;
      }
      try {
        host.undeployHere(name);
      } catch (RuntimeException e) {
        LOG.atWarn().addKeyValue("app", name).addKeyValue("error", e.toString()).log("sync");
      }
    }
  }

  private void syncOne(Host host, String name, int version) {
    int here = host.versionHere(name);
    if (here >= version || failedRestores.getOrDefault(name, 0) >= version) {
      return;
    }
    Optional<AppRecord> record = records.load(name);
    if (record.isEmpty() || record.get().version() != version) {
      return; // changed meanwhile: the next round sees the new record
    }
    try {
      host.deploy(record.get(), records.options(record.get().options()));
      failedRestores.remove(name);
      log.note(name, "version " + version + " brought back from the deployment record");
    } catch (RuntimeException e) {
      failedRestores.put(name, version);
      log.note(name, "version " + version + " on record could not be deployed here: " + e);
      LOG.atWarn()
          .addKeyValue("app", name)
          .addKeyValue("version", version)
          .addKeyValue("error", e.toString())
          .log("deployment on record not brought back");
    }
  }
}
