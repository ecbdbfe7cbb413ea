package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Where a redrive resumes, read from an execution's history (decision 0018). */
class RedriveTest {
  private static List<JsonNode> events(String... json) throws Exception {
    List<JsonNode> out = new ArrayList<>();
    for (String event : json) {
      out.add(JsonHttp.MAPPER.readTree(event.replace('\'', '"')));
    }
    return out;
  }

  private static final String STARTED =
      "{'type':'ExecutionStarted','at_ms':1000,'started_ms':990,'input':{'order':7},"
          + "'workflow':'main','name':'n1','path':'','state':null}";

  @Test
  void resumesAtTheTopLevelStateEnteredLastAndNeverExited() throws Exception {
    Redrive plan =
        Redrive.of(
            "e1",
            events(
                STARTED,
                "{'type':'StateEntered','state':'A','path':'','input':{'order':7}}",
                "{'type':'StateExited','state':'A','path':'','output':{'a':1}}",
                "{'type':'StateEntered','state':'Fan','path':'','input':{'a':1}}",
                "{'type':'StateEntered','state':'In','path':'Fan[0]','input':{'a':1}}",
                "{'type':'StateExited','state':'In','path':'Fan[0]','output':2}",
                "{'type':'StateFailed','state':'Fan','path':'','error':'E'}",
                "{'type':'ExecutionFailed','state':null,'path':'','error':'E'}"));
    assertThat(plan.state()).isEqualTo("Fan");
    assertThat(plan.stateInput().toString()).isEqualTo("{\"a\":1}");
    assertThat(plan.executionInput().toString()).isEqualTo("{\"order\":7}");
    assertThat(plan.startedMs()).isEqualTo(990);
    assertThat(plan.workflow()).isEqualTo("main");
    assertThat(plan.name()).isEqualTo("n1");
    assertThat(plan.count()).isEqualTo(1);
  }

  @Test
  void carriesTheVariablesTheStateWasEnteredWith() throws Exception {
    Redrive plan =
        Redrive.of(
            "e1",
            events(
                STARTED,
                "{'type':'StateEntered','state':'A','path':'','input':1}",
                "{'type':'StateExited','state':'A','path':'','output':2}",
                "{'type':'StateEntered','state':'B','path':'','input':2,'variables':{'k':[1]}}",
                "{'type':'ExecutionFailed','state':null,'path':''}"));
    assertThat(plan.variables().toString()).isEqualTo("{\"k\":[1]}");
    Redrive none =
        Redrive.of(
            "e1",
            events(
                STARTED,
                "{'type':'StateEntered','state':'A','path':'','input':1}",
                "{'type':'ExecutionFailed','state':null,'path':''}"));
    assertThat(none.variables().toString()).isEqualTo("{}");
  }

  @Test
  void refusesWhenTheVariablesWereTruncated() throws Exception {
    List<JsonNode> run =
        events(
            STARTED,
            "{'type':'StateEntered','state':'A','path':'','input':1,"
                + "'variables':{'truncated':true,'bytes':40000,'preview':'{'}}",
            "{'type':'ExecutionFailed','state':null,'path':''}");
    assertThatThrownBy(() -> Redrive.of("e1", run))
        .isInstanceOf(Refused.class)
        .hasMessageContaining("its variables");
  }

  @Test
  void aSecondRedriveCountsOnAndLooksAtTheLatestRunOnly() throws Exception {
    Redrive plan =
        Redrive.of(
            "e1",
            events(
                STARTED,
                "{'type':'StateEntered','state':'A','path':'','input':1}",
                "{'type':'ExecutionFailed','state':null,'path':''}",
                "{'type':'ExecutionRedriven','state':null,'path':'','redrive_count':1}",
                "{'type':'StateEntered','state':'A','path':'','input':1}",
                "{'type':'StateExited','state':'A','path':'','output':2}",
                "{'type':'StateEntered','state':'B','path':'','input':2}",
                "{'type':'ExecutionFailed','state':null,'path':''}"));
    assertThat(plan.state()).isEqualTo("B");
    assertThat(plan.count()).isEqualTo(2);
  }

  @Test
  void refusesWithoutAStateToResumeAt() throws Exception {
    // a native workflow records tasks, no states; an app without history records nothing
    List<JsonNode> nativeRun =
        events(
            STARTED,
            "{'type':'TaskScheduled','state':'g','path':''}",
            "{'type':'ExecutionFailed','state':null,'path':''}");
    assertThatThrownBy(() -> Redrive.of("e1", nativeRun))
        .isInstanceOf(Refused.class)
        .hasMessageContaining("no recorded state to redrive from");
    assertThatThrownBy(() -> Redrive.of("e1", List.of()))
        .hasMessageContaining("execution 'e1' has no recorded state");
  }

  @Test
  void refusesWhenTheInputWasTruncated() throws Exception {
    List<JsonNode> big =
        events(
            STARTED,
            "{'type':'StateEntered','state':'A','path':'',"
                + "'input':{'truncated':true,'bytes':40000,'preview':'{}'}}");
    assertThatThrownBy(() -> Redrive.of("e1", big))
        .hasMessageContaining("too large to be recorded");
  }
}
