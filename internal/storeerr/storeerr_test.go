package storeerr

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// A push refused by a loopx server hook reaches the client as git's
// summary with the server's lines in parentheses, joined by "; ": each
// refused commit's line, then the hook's own verdict. Each refusal is read
// back whole, and nothing after it (the verdict, git's wrapping) is glued
// to the last one.
func TestParseRefusals(t *testing.T) {
	const (
		a = "bdc350f380983354048c057bdc640a885a6783d8"
		b = "11d9eb096eca715ea56300592e2104f41e903c36"
	)
	skew := "dated 2026-01-01T02:00:00Z, 1h0m0s ahead of the server's clock (2026-01-01T01:00:00Z; at most 30s allowed)"
	pushed := func(server string) string {
		return fmt.Sprintf("remote origin refused the update: [remote rejected] (pre-receive hook declined) (%s): remote rejected the request", server)
	}
	for _, c := range []struct {
		name, msg string
		want      []Refusal
	}{
		{"none", pushed("loopx state is frozen by policy"), nil},
		{"one, with the hook's verdict", pushed("loopx server-hook: refused " + a + " on refs/loopx/state: corrupt_record (missing_request): the commit records no request (Loopx-Request); loopx: corrupt_record: push refused: 1 commit(s) of refs/loopx/state do not hold"),
			[]Refusal{{Revision: a, Ref: "refs/loopx/state", Code: "corrupt_record", Reason: "missing_request", Message: "the commit records no request (Loopx-Request)"}}},
		{"two, with the hook's verdict", pushed("loopx server-hook: refused " + a + " on refs/loopx/state: clock_skew (future_dated): " + skew + "; loopx server-hook: refused " + b + " on refs/loopx/state: clock_skew (future_dated): " + skew + "; loopx: clock_skew: push refused: 2 commit(s) of refs/loopx/state do not hold"),
			[]Refusal{{Revision: a, Ref: "refs/loopx/state", Code: "clock_skew", Reason: "future_dated", Message: skew},
				{Revision: b, Ref: "refs/loopx/state", Code: "clock_skew", Reason: "future_dated", Message: skew}}},
		{"one, without a verdict", pushed("loopx server-hook: refused " + a + " on refs/heads/loopx: signature_required: commit is not signed (by agent-a)"),
			[]Refusal{{Revision: a, Ref: "refs/heads/loopx", Code: "signature_required", Message: "commit is not signed (by agent-a)"}}},
	} {
		if got := ParseRefusals(c.msg); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %#v\nwant %#v", c.name, got, c.want)
		}
	}
}

// Map gives a refused push its contract code, the first refusal's code as
// the reason, and the refusals as they were.
func TestMapRefusedPush(t *testing.T) {
	const a = "bdc350f380983354048c057bdc640a885a6783d8"
	err := fmt.Errorf("gitstore: remote origin refused the update: [remote rejected] (pre-receive hook declined) (loopx server-hook: refused %s on refs/loopx/state: clock_skew (future_dated): dated ahead; loopx: clock_skew: push refused: 1 commit(s) of refs/loopx/state do not hold): %w", a, gitstore.ErrRemoteRejected)
	le, ok := lease.AsError(Map(err))
	if !ok || le.Code != lease.CodeRemoteRejected {
		t.Fatalf("Map = %v, want remote_rejected", Map(err))
	}
	if le.Details["reason"] != "clock_skew" {
		t.Errorf("reason = %v, want clock_skew", le.Details["reason"])
	}
	refused, _ := le.Details["refused"].([]Refusal)
	if len(refused) != 1 || refused[0].Message != "dated ahead" {
		t.Errorf("refused = %#v, want one refusal whose message is \"dated ahead\"", refused)
	}
	if !errors.Is(err, gitstore.ErrRemoteRejected) {
		t.Fatal("the test's error is not a rejection")
	}
}
