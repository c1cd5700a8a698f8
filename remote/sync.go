package remote

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/storeerr"
	"github.com/loopx-dev/loopx/lease"
)

// SyncEntry is what sync did with one offline mutation.
type SyncEntry struct {
	// OfflineRevision is the local commit the mutation made offline.
	OfflineRevision string `json:"offline_revision"`
	Operation       string `json:"operation"`
	GoalID          string `json:"goal_id,omitempty"`
	TodoID          string `json:"todo_id,omitempty"`
	Actor           string `json:"actor,omitempty"`
	// Status is the replay's status (applied | replayed | no_change), or
	// "refused" when the server's head now refuses the request.
	Status string `json:"status"`
	// Revision is the server commit of the result (applied or replayed).
	Revision string     `json:"revision,omitempty"`
	Error    *SyncError `json:"error,omitempty"`
}

// SyncError is the refusal of a replayed mutation.
type SyncError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// SyncData is the result of sync.
type SyncData struct {
	Remote string `json:"remote"`
	// Replays lists the offline mutations dealt with, in their order.
	Replays []SyncEntry `json:"replays"`
	Applied int         `json:"applied"` // applied, replayed or no_change
	Refused int         `json:"refused"`
	// Pending counts offline mutations still to sync (made during the sync).
	Pending int `json:"pending"`
}

// Sync brings a store that was used offline up to date with its remote: it
// re-decides, in order, every offline mutation the remote lacks on the
// remote's head (each through the normal remote transaction, so receipts
// make a repeated sync harmless), reports those the head now refuses, and
// then points the local ref at the server's head. Without offline work it
// fetches and fast-forwards the local ref. A transient failure stops it
// (remote_unavailable, store_conflict): what was done is remembered and the
// next sync continues from there.
//
// replay decides one recorded request as a mutation of the store on the
// server's head (through r.ForSync()'s binding, so that pending offline
// work does not block it). Sync returns what it did (nil when it stopped
// before the end) with the server's head, and an error when it stopped or
// some offline work was refused (with what it did then too).
func (r *Remote) Sync(replay Replay) (*SyncData, gitstore.Hash, error) {
	if r.name == "" {
		return nil, gitstore.ZeroHash, lease.Errorf(lease.CodeInvalidRequest, "this store has no remote: use --remote NAME, or `loopx init --remote NAME`")
	}
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	unlock, err := r.git.LockNamed(ctx, "loopx-sync.lock")
	if err != nil {
		return nil, gitstore.ZeroHash, lease.Errorf(lease.CodeStoreBusy, "another sync is running: retry with the same arguments")
	}
	defer unlock()

	d := SyncData{Remote: r.name, Replays: []SyncEntry{}}
	pending, _, err := r.offlinePending()
	if err != nil {
		return nil, gitstore.ZeroHash, storeerr.Map(err)
	}
	var last gitstore.Hash
	for _, c := range pending {
		if isBoard(c.msg) {
			// An offline board: the replays deliver their own.
			last = c.hash
			if err := r.writeSyncMarker(last); err != nil {
				return nil, gitstore.ZeroHash, storeerr.Map(err)
			}
			continue
		}
		e := syncEntryOf(c)
		status, revision, err := replayCommit(c, replay)
		if err != nil {
			le, ok := lease.AsError(err)
			if !ok || lease.ClassOf(le.Code) != lease.Rejected {
				// Transient: stop here; the next sync continues.
				if !last.IsZero() {
					_ = r.writeSyncMarker(last)
				}
				if !ok {
					return nil, gitstore.ZeroHash, storeerr.Map(err)
				}
				out := *le
				out.Details = map[string]any{}
				for k, v := range le.Details {
					out.Details[k] = v
				}
				out.Details["sync"] = d
				out.Details["stopped_at"] = c.hash.String()
				return nil, gitstore.ZeroHash, &out
			}
			e.Status = "refused"
			e.Error = &SyncError{Code: string(le.Code), Message: le.Message, Details: le.Details}
			d.Refused++
		} else {
			e.Status, e.Revision = status, revision
			if e.Status == "" {
				e.Status = lease.StatusApplied
			}
			d.Applied++
		}
		d.Replays = append(d.Replays, e)
		last = c.hash
		if err := r.writeSyncMarker(last); err != nil {
			return nil, gitstore.ZeroHash, storeerr.Map(err)
		}
	}

	// Point the local ref at the server's head, unless offline work was
	// added meanwhile (it stays pending for the next sync).
	head, err := r.finishSync(last)
	if err != nil {
		return nil, gitstore.ZeroHash, storeerr.Map(err)
	}
	if rest, _, err := r.offlinePending(); err == nil {
		d.Pending = mutations(rest)
	}
	if d.Refused > 0 {
		// Some offline work did not land: say so with exit 1, listing
		// each refusal (the code is the first refusal's own).
		var first *SyncError
		var refused []SyncEntry
		for _, e := range d.Replays {
			if e.Error != nil {
				if first == nil {
					first = e.Error
				}
				refused = append(refused, e)
			}
		}
		return &d, head, lease.Errorf(lease.Code(first.Code), "%d of %d offline request(s) were refused on the server's head (the rest were synced): %s",
			d.Refused, d.Refused+d.Applied, first.Message).With("refused", refused).With("sync", d)
	}
	return &d, head, nil
}

// Replay decides one recorded request as a mutation of the store on the
// server's head, and says its status and revision.
type Replay func(lease.Call) (status, revision string, err error)

// replayCommit re-decides the request recorded on an offline commit, on
// the server's head. A request written by loopx before requests were
// versioned (base64 of {"op", "request"}) is read by the legacy decoder,
// so offline work made by an older loopx still syncs.
func replayCommit(c offlineCommit, replay Replay) (status, revision string, err error) {
	call, err := offlineRequest(c)
	if err != nil {
		return "", "", err
	}
	return replay(call)
}

// offlineRequest decodes the request an offline commit records.
func offlineRequest(c offlineCommit) (lease.Call, error) {
	raw := trailerValue(c.msg, TrailerRequest)
	if raw == "" {
		return lease.Call{}, lease.Errorf(lease.CodeInvalidRequest, "offline commit %s records no request: it cannot be replayed", c.hash)
	}
	if strings.HasPrefix(raw, "{") {
		call, err := lease.DecodeRequest([]byte(raw))
		if err != nil {
			return lease.Call{}, fmt.Errorf("offline commit %s: %w", c.hash, err)
		}
		return call, nil
	}
	data, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return lease.Call{}, lease.Errorf(lease.CodeInvalidRequest, "offline commit %s: bad %s trailer: %v", c.hash, TrailerRequest, err)
	}
	call, err := lease.DecodeLegacyRequest(data)
	if err != nil {
		return lease.Call{}, fmt.Errorf("offline commit %s: %w", c.hash, err)
	}
	if add, ok := call.Req.(*lease.AddRequest); ok && add.Todo == "" {
		// A generated todo id is part of what the offline decision made:
		// keep it, so the replay adds that todo (and a second sync finds
		// it). (Recorded requests of format 2 carry it already.)
		add.Todo = trailerValue(c.msg, lease.TrailerTodo)
	}
	return call, nil
}

func syncEntryOf(c offlineCommit) SyncEntry {
	e, _ := lease.ParseMessage(c.msg)
	return SyncEntry{OfflineRevision: c.hash.String(), Operation: e.Operation, GoalID: e.Goal, TodoID: e.Todo, Actor: e.Actor}
}

// finishSync fetches the server's head and, under the fence, moves the
// local ref to it if the local ref's offline work is all dealt with
// (its tip is last, or it has none).
func (r *Remote) finishSync(last gitstore.Hash) (gitstore.Hash, error) {
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	unlock, err := r.git.Lock(ctx, true)
	if err != nil {
		return gitstore.ZeroHash, err
	}
	defer unlock()
	head, err := r.git.Fetch(ctx, r.name)
	if err != nil {
		return gitstore.ZeroHash, err
	}
	r.noteFetched(head)
	local, err := r.git.Head()
	if err != nil {
		return head, err
	}
	if rest, _, err := r.offlinePending(); err != nil || len(rest) > 0 {
		return head, err
	}
	if head.IsZero() || local == head {
		r.clearSyncMarker()
		return head, nil
	}
	if ok, err := r.git.IsAncestor(local, head, ancestryLimit); err != nil {
		return head, err
	} else if !ok && (last.IsZero() || local != last) {
		// Not ours to drop: keep it reachable.
		if err := r.backup(local); err != nil {
			return head, err
		}
	}
	if err := r.git.UpdateRef(r.git.Ref(), local, head); err != nil {
		if errors.Is(err, gitstore.ErrConflict) {
			return head, nil // moved meanwhile: the next command sees it
		}
		return head, err
	}
	r.clearSyncMarker()
	return head, nil
}
