package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.service.JsonHttp;
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
  void keepsTheOutputsOfTheItemsThatSucceeded_acrossRedrives_notOfNestedOrEarlierEntries()
      throws Exception {
    List<JsonNode> run =
        events(
            STARTED,
            "{'type':'StateEntered','state':'Each','path':'','input':[1,2,3,4]}",
            "{'type':'MapStarted','state':'Each','path':'','items':4}",
            "{'type':'BranchSucceeded','state':null,'path':'Each[0]','output':10}",
            "{'type':'BranchSucceeded','state':null,'path':'Each[1]/Inner[0]','output':'nested'}",
            "{'type':'BranchSucceeded','state':null,'path':'Each[3]',"
                + "'output':{'truncated':true,'bytes':40000,'preview':'{'}}",
            "{'type':'BranchFailed','state':null,'path':'Each[1]','error':'E'}",
            "{'type':'StateFailed','state':'Each','path':'','error':'E'}",
            "{'type':'ExecutionFailed','state':null,'path':'','error':'E'}");
    // item 0 kept; item 3's output was not recorded in full: it runs again
    assertThat(Redrive.of("e1", run).kept().toString()).isEqualTo("{\"0\":10}");
    List<JsonNode> again = new ArrayList<>(run);
    again.addAll(
        events(
            "{'type':'ExecutionRedriven','state':null,'path':'','redrive_count':1}",
            "{'type':'StateEntered','state':'Each','path':'','input':[1,2,3,4]}",
            "{'type':'MapStarted','state':'Each','path':'','items':4,'kept':[0]}",
            "{'type':'BranchSucceeded','state':null,'path':'Each[2]','output':30}",
            "{'type':'BranchFailed','state':null,'path':'Each[1]','error':'E'}",
            "{'type':'ExecutionFailed','state':null,'path':'','error':'E'}"));
    Redrive second = Redrive.of("e1", again);
    assertThat(second.kept().toString()).isEqualTo("{\"0\":10,\"2\":30}");
    assertThat(second.count()).isEqualTo(2);
    // A Retry enters the state again: every item runs again, nothing is kept from before.
    List<JsonNode> retried = new ArrayList<>(run.subList(0, 4));
    retried.addAll(
        events(
            "{'type':'StateEntered','state':'Each','path':'','input':[1,2,3,4]}",
            "{'type':'ExecutionFailed','state':null,'path':'','error':'E'}"));
    assertThat(Redrive.of("e1", retried).kept().isEmpty()).isTrue();
  }

  @Test
  void keepsNothingForAStateThatIsNotTheOneRedriven() throws Exception {
    Redrive plan =
        Redrive.of(
            "e1",
            events(
                STARTED,
                "{'type':'StateEntered','state':'Fan','path':'','input':1}",
                "{'type':'BranchSucceeded','state':null,'path':'Fan[0]','output':1}",
                "{'type':'BranchSucceeded','state':null,'path':'Fan[1]','output':2}",
                "{'type':'StateExited','state':'Fan','path':'','output':[1,2]}",
                "{'type':'StateEntered','state':'Next','path':'','input':[1,2]}",
                "{'type':'ExecutionFailed','state':null,'path':'','error':'E'}"));
    assertThat(plan.state()).isEqualTo("Next");
    assertThat(plan.kept().isEmpty()).isTrue();
    assertThat(Redrive.slotOf("Fan [x][12]", "Fan [x]")).isEqualTo(12);
    assertThat(Redrive.slotOf("Fan[1]/In[0]", "Fan")).isEqualTo(-1);
    assertThat(Redrive.slotOf("Fanout[1]", "Fan")).isEqualTo(-1);
  }

  @Test
  void refusesWhenTheKeptOutputsAreLargerThanARedriveCarries() throws Exception {
    String big = "x".repeat(30_000);
    List<String> json = new ArrayList<>();
    json.add(STARTED);
    json.add("{'type':'StateEntered','state':'Each','path':'','input':[]}");
    for (int i = 0; i < 20; i++) {
      json.add(
          "{'type':'BranchSucceeded','state':null,'path':'Each["
              + i
              + "]','output':'"
              + big
              + "'}");
    }
    json.add("{'type':'ExecutionFailed','state':null,'path':'','error':'E'}");
    List<JsonNode> run = events(json.toArray(String[]::new));
    assertThatThrownBy(() -> Redrive.of("e1", run))
        .isInstanceOf(Refused.class)
        .hasMessageContaining("20 branches or items of state 'Each'")
        .hasMessageContaining("more than a redrive carries");
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
