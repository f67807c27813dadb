package hostres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
)

// admitNow is admit that must not wait.
func admitNow(t *testing.T, r *rollout, group, id string) *rolloutTicket {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ticket, err := r.admit(ctx, group, id)
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	return ticket
}

// admission is the result of an admit.
type admission struct {
	ticket *rolloutTicket
	err    error
}

// admitLater starts admit in a goroutine; the channel gets its result.
func admitLater(ctx context.Context, r *rollout, group, id string) chan admission {
	ch := make(chan admission, 1)
	go func() {
		ticket, err := r.admit(ctx, group, id)
		ch <- admission{ticket, err}
	}()
	return ch
}

// waiting reports whether an admission is still blocked.
func waiting(ch chan admission) bool {
	select {
	case a := <-ch:
		ch <- a
		return false
	case <-time.After(50 * time.Millisecond):
		return true
	}
}

// receiveN waits for n of chans to be admitted, and returns them and the
// rest.
func receiveN(t *testing.T, chans []chan admission, n int) (got []admission, rest []chan admission) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for len(got) < n {
		select {
		case <-deadline:
			t.Fatalf("%d of %d admitted", len(got), n)
		case <-time.After(time.Millisecond):
		}
		for i := 0; i < len(chans); i++ {
			select {
			case a := <-chans[i]:
				got = append(got, a)
				chans = append(chans[:i:i], chans[i+1:]...)
				i--
			default:
			}
		}
	}
	return got, chans
}

func receive(t *testing.T, ch chan admission) admission {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(5 * time.Second):
		t.Fatal("admission still waiting")
		return admission{}
	}
}

func TestRollout_nilAdmitsAtOnce(t *testing.T) {
	t.Parallel()
	var r *rollout
	ticket, err := r.admit(context.Background(), "kha_file", "h:22:/a")
	if ticket != nil || err != nil {
		t.Fatalf("got %v, %v", ticket, err)
	}
	ticket.done(true, true, "the cause") // nil ticket: nothing to do
}

func TestRollout_canaryThenBatches(t *testing.T) {
	r := newRollout(rolloutPolicy{canary: 1, batch: 2, stopOnFailure: true}, nil)
	ctx := context.Background()
	canary := admitNow(t, r, "g", "h0:22:/f")
	others := []chan admission{admitLater(ctx, r, "g", "h1:22:/f"), admitLater(ctx, r, "g", "h2:22:/f"), admitLater(ctx, r, "g", "h3:22:/f")}
	for _, o := range others {
		if !waiting(o) {
			t.Fatal("a resource was admitted while the canary ran")
		}
	}
	canary.done(true, false, "")
	// Two of the three run at once, the third waits for one of them.
	admitted, rest := receiveN(t, others, 2)
	if len(rest) != 1 || !waiting(rest[0]) {
		t.Fatal("admitted three after the canary (batch = 2)")
	}
	admitted[0].ticket.done(true, false, "")
	if a := receive(t, rest[0]); a.err != nil {
		t.Fatal(a.err)
	}
	// The canary phase is over for resources Terraform starts later too.
	late := admitLater(ctx, r, "g", "h4:22:/f")
	if !waiting(late) {
		t.Fatal("admitted a fourth while two ran (batch = 2)")
	}
	admitted[1].ticket.done(true, false, "")
	if a := receive(t, late); a.err != nil || a.ticket.canary {
		t.Fatalf("late: %+v", a)
	}
}

func TestRollout_failedCanaryStopsTheGroup(t *testing.T) {
	r := newRollout(rolloutPolicy{canary: 1, stopOnFailure: true}, nil)
	ctx := context.Background()
	canary := admitNow(t, r, "g", "h0:22:/f")
	waiter := admitLater(ctx, r, "g", "h1:22:/f")
	other := admitNow(t, r, "other", "h1:22:/g") // another group is independent
	canary.done(true, true, "the cause")
	a := receive(t, waiter)
	var stopped notAttemptedError
	if !errors.As(a.err, &stopped) || a.ticket != nil {
		t.Fatalf("got %+v", a)
	}
	want := "not attempted: canary h0:22:/f failed: the cause"
	if a.err.Error() != want {
		t.Fatalf("got %q, want %q", a.err, want)
	}
	// Later arrivals fail at once.
	if _, err := r.admit(ctx, "g", "h2:22:/f"); err == nil || !strings.Contains(err.Error(), "canary h0:22:/f") {
		t.Fatalf("late arrival: %v", err)
	}
	other.done(true, false, "")
}

func TestRollout_failureInABatchStopsAdmission(t *testing.T) {
	r := newRollout(rolloutPolicy{batch: 1, stopOnFailure: true}, nil)
	ctx := context.Background()
	first := admitNow(t, r, "g", "h0:22:/f")
	waiter := admitLater(ctx, r, "g", "h1:22:/f")
	if !waiting(waiter) {
		t.Fatal("batch = 1 admitted two")
	}
	first.done(true, true, "the cause")
	a := receive(t, waiter)
	if a.err == nil || a.err.Error() != "not attempted: h0:22:/f failed: the cause" {
		t.Fatalf("got %+v", a)
	}
}

func TestRollout_withoutStopOnFailureGoesOn(t *testing.T) {
	r := newRollout(rolloutPolicy{canary: 1, batch: 1}, nil)
	ctx := context.Background()
	canary := admitNow(t, r, "g", "h0:22:/f")
	waiter := admitLater(ctx, r, "g", "h1:22:/f")
	canary.done(true, true, "the cause")
	if a := receive(t, waiter); a.err != nil {
		t.Fatal(a.err)
	}
}

func TestRollout_unchangedCanaryGivesItsPlace(t *testing.T) {
	r := newRollout(rolloutPolicy{canary: 1, stopOnFailure: true}, nil)
	ctx := context.Background()
	first := admitNow(t, r, "g", "h0:22:/f")
	second := admitLater(ctx, r, "g", "h1:22:/f")
	third := admitLater(ctx, r, "g", "h2:22:/f")
	first.done(false, false, "") // the host had the file already: proved nothing
	// Exactly one of the two waiting becomes the canary.
	got, rest := receiveN(t, []chan admission{second, third}, 1)
	next := got[0].ticket
	if !next.canary || !waiting(rest[0]) {
		t.Fatalf("after an unchanged canary: next %+v, the other admitted too", next)
	}
	next.done(true, false, "")
	if a := receive(t, rest[0]); a.err != nil {
		t.Fatal(a.err)
	}
}

func TestRollout_waitEndsWithTheContext(t *testing.T) {
	r := newRollout(rolloutPolicy{canary: 1, stopOnFailure: true}, nil)
	admitNow(t, r, "g", "h0:22:/f")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := r.admit(ctx, "g", "h1:22:/f"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
}

func TestRollout_groupPolicies(t *testing.T) {
	t.Parallel()
	r := newRollout(rolloutPolicy{canary: 1, stopOnFailure: true}, map[string]rolloutPolicy{"fast": {}})
	admitNow(t, r, "fast", "h0:22:/f")
	admitNow(t, r, "fast", "h1:22:/f") // no canary in "fast"
	admitNow(t, r, "kha_file", "h0:22:/g")
	if w := admitLater(context.Background(), r, "kha_file", "h1:22:/g"); !waiting(w) {
		t.Fatal("the default policy's canary did not hold the second")
	}
}

// Hundreds of resources of one group, arriving 50 at a time as Terraform
// starts them: never more than batch run at once, and each is admitted.
func TestRollout_concurrencyNeverExceedsBatch(t *testing.T) {
	const hosts, batch, parallelism = 300, 7, 50
	r := newRollout(rolloutPolicy{canary: 2, batch: batch, stopOnFailure: true}, nil)
	var mu sync.Mutex
	running, most, canaries := 0, 0, 0
	slots := make(chan struct{}, parallelism)
	var wg sync.WaitGroup
	for i := range hosts {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			ticket, err := r.admit(context.Background(), "g", "h")
			if err != nil {
				t.Error(i, err)
				return
			}
			mu.Lock()
			running++
			most = max(most, running)
			if ticket.canary {
				canaries++
				if running > 2 {
					t.Errorf("canary %d ran beside %d others", i, running-1)
				}
			}
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			running--
			mu.Unlock()
			ticket.done(true, false, "")
		}()
	}
	wg.Wait()
	if most > batch || canaries != 2 {
		t.Fatalf("at most %d at once (batch %d), %d canaries", most, batch, canaries)
	}
}

// A group's values override rollout's one by one; the rest are rollout's,
// whose own defaults are canary = 1, no batch, stop_on_failure = true.
func TestRollout_policiesFromConfiguration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	typ := RolloutAttribute().GetType().(basetypes.ObjectType)
	groupType := typ.AttrTypes["groups"].(basetypes.MapType).ElemType.(basetypes.ObjectType)
	group := func(canary, batch attr.Value, stop attr.Value) attr.Value {
		return types.ObjectValueMust(groupType.AttrTypes, map[string]attr.Value{"canary": canary, "batch": batch, "stop_on_failure": stop})
	}
	null, nullBool := types.Int64Null(), types.BoolNull()
	obj := types.ObjectValueMust(typ.AttrTypes, map[string]attr.Value{
		"canary": null, "batch": types.Int64Value(10), "stop_on_failure": nullBool,
		"groups": types.MapValueMust(groupType, map[string]attr.Value{
			"lb":   group(types.Int64Value(3), null, nullBool),
			"file": group(null, types.Int64Value(2), types.BoolValue(false)),
		}),
	})
	r, diags := rolloutFrom(ctx, obj)
	if diags.HasError() {
		t.Fatal(diags)
	}
	for group, want := range map[string]rolloutPolicy{
		"kha_file": {canary: 1, batch: 10, stopOnFailure: true},
		"lb":       {canary: 3, batch: 10, stopOnFailure: true},
		"file":     {canary: 1, batch: 2, stopOnFailure: false},
	} {
		if got := r.policy(group); got != want {
			t.Errorf("%s: got %+v, want %+v", group, got, want)
		}
	}
	if r, _ := rolloutFrom(ctx, types.ObjectNull(typ.AttrTypes)); r != nil {
		t.Error("a null rollout made a coordinator")
	}
}

// TestClusterTurn: the certificate changes of one cluster take turns, one
// at a time, and none starts after one failed; another cluster goes on,
// and so does a cluster's change in the next run (a new configuration).
func TestClusterTurn(t *testing.T) {
	d := &ProviderData{clusters: newRollout(clusterPolicy, nil)}
	ctx := context.Background()
	first, err := d.clusterTurn("h1:22:/pki/apiserver.crt")(ctx, "ca-a")
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		done, err := d.clusterTurn("h2:22:/pki/apiserver.crt")(ctx, "ca-a")
		if done != nil {
			done(false)
		}
		second <- err
	}()
	other, err := d.clusterTurn("h9:22:/pki/apiserver.crt")(ctx, "ca-b")
	if err != nil {
		t.Fatalf("another cluster waits: %v", err)
	}
	other(false)
	select {
	case err := <-second:
		t.Fatalf("the second change of ca-a started while the first ran: %v", err)
	default:
	}
	first(true) // failed after it touched its host
	err = <-second
	if err == nil || !strings.Contains(err.Error(), "not attempted: h1:22:/pki/apiserver.crt failed (its error is among this run's): no other node of the "+
		"cluster changes its certificate after a failure in this run, so this one keeps its previous certificate") {
		t.Fatalf("the change after the failure: %v", err)
	}
	next := &ProviderData{clusters: newRollout(clusterPolicy, nil)}
	done, err := next.clusterTurn("h2:22:/pki/apiserver.crt")(ctx, "ca-a")
	if err != nil {
		t.Fatalf("the next run: %v", err)
	}
	done(false)
	if (*ProviderData)(nil).clusterTurn("h1:22:/x") != nil {
		t.Error("a turn without a provider configuration")
	}
}
