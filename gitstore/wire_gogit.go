package gitstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/storage/memory"
)

// go-git's transports, in process: XXX

// goGitEndpoint opens go-git's transport to remote.
func (s *Store) goGitEndpoint(remote string) (transport.Transport, *transport.Endpoint, error) {
	url, err := s.RemoteURL(remote)
	if err != nil {
		return nil, nil, err
	}
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return nil, nil, fmt.Errorf("gitstore: remote %s: bad URL %q: %v: %w", remote, url, err, ErrRemoteRejected)
	}
	t, err := client.NewClient(ep)
	if err != nil {
		return nil, nil, fmt.Errorf("gitstore: remote %s: %v: %w", remote, err, ErrRemoteRejected)
	}
	return t, ep, nil
}

// classify wraps a transport error as ErrRemoteRejected (the server answered
// and refused) or ErrRemoteUnavailable (everything else: it could not be
// reached or the conversation broke).
func classify(remote, what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrRemoteUnavailable) || errors.Is(err, ErrRemoteRejected) || errors.Is(err, ErrNoRemote) {
		return err
	}
	switch {
	case errors.Is(err, transport.ErrRepositoryNotFound),
		errors.Is(err, transport.ErrAuthenticationRequired),
		errors.Is(err, transport.ErrAuthorizationFailed),
		errors.Is(err, transport.ErrInvalidAuthMethod),
		errors.As(err, new(*pktline.ErrorLine)):
		return fmt.Errorf("gitstore: remote %s: %s: %v: %w", remote, what, err, ErrRemoteRejected)
	}
	// Everything else (refused or reset connections, timeouts, broken
	// conversations, servers answering 5xx) may pass: retry later.
	return fmt.Errorf("gitstore: remote %s: %s: %v: %w", remote, what, err, ErrRemoteUnavailable)
}

// advertised returns the value of the store's ref in a ref advertisement.
func (s *Store) advertised(ar *packp.AdvRefs) Hash {
	if ar == nil {
		return ZeroHash
	}
	return ar.References[s.ref]
}

// goGitLsRemote is LsRemote through go-git.
func (s *Store) goGitLsRemote(ctx context.Context, remote string) (Hash, error) {
	t, ep, err := s.goGitEndpoint(remote)
	if err != nil {
		return ZeroHash, err
	}
	sess, err := t.NewUploadPackSession(ep, nil)
	if err != nil {
		return ZeroHash, classify(remote, "connect", err)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return ZeroHash, nil
	}
	if err != nil {
		return ZeroHash, classify(remote, "list refs", err)
	}
	return s.advertised(ar), nil
}

// goGitFetch is Fetch through go-git: one session lists the ref and, when
// its objects are missing, downloads them (wants = the head, haves; no
// thin packs) and stores them fsynced (storePack).
func (s *Store) goGitFetch(ctx context.Context, remote string, haves []Hash) (Hash, error) {
	t, ep, err := s.goGitEndpoint(remote)
	if err != nil {
		return ZeroHash, err
	}
	sess, err := t.NewUploadPackSession(ep, nil)
	if err != nil {
		return ZeroHash, classify(remote, "connect", err)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	var head Hash
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
	case err != nil:
		return ZeroHash, classify(remote, "list refs", err)
	default:
		head = s.advertised(ar)
	}
	if !head.IsZero() && !s.hasCommit(head) {
		req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
		// Self-contained packs only: every delta base is in the pack.
		req.Capabilities.Delete(capability.ThinPack)
		if ar.Capabilities.Supports(capability.NoProgress) {
			req.Capabilities.Set(capability.NoProgress)
		}
		req.Wants = []Hash{head}
		for _, h := range haves {
			if !h.IsZero() && h != head && s.hasCommit(h) {
				req.Haves = append(req.Haves, h)
			}
		}
		resp, err := sess.UploadPack(ctx, req)
		if err != nil {
			return ZeroHash, classify(remote, "fetch", err)
		}
		var r io.Reader = resp
		switch {
		case req.Capabilities.Supports(capability.Sideband64k):
			r = sideband.NewDemuxer(sideband.Sideband64k, resp)
		case req.Capabilities.Supports(capability.Sideband):
			r = sideband.NewDemuxer(sideband.Sideband, resp)
		}
		data, err := io.ReadAll(r)
		resp.Close()
		if err != nil {
			return ZeroHash, classify(remote, "fetch", err)
		}
		if err := s.storePack(data); err != nil {
			if errors.Is(err, ErrIO) {
				return ZeroHash, err
			}
			// Not a local failure: what arrived is not a whole pack (the
			// server or the connection died mid-transfer).
			return ZeroHash, fmt.Errorf("gitstore: remote %s: fetch cut off (%v): %w", remote, err, ErrRemoteUnavailable)
		}
		if !s.hasCommit(head) {
			return ZeroHash, fmt.Errorf("gitstore: remote %s: fetched pack lacks %s: %w", remote, head, ErrRemoteUnavailable)
		}
	}
	return head, nil
}

// storePack makes the objects of a (self-contained) pack durable in the
// store: as loose objects, or for a large pack as a pack and its index.
func (s *Store) storePack(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	if len(data) < 12+20 || string(data[:4]) != "PACK" {
		return fmt.Errorf("gitstore: fetched data is not a pack: %w", ErrRemoteUnavailable)
	}
	count := int(binary.BigEndian.Uint32(data[8:12]))
	if count > loosePackLimit {
		return s.storeAsPack(data)
	}
	mem := memory.NewStorage()
	p, err := packfile.NewParserWithStorage(packfile.NewScanner(bytes.NewReader(data)), mem)
	if err != nil {
		return fmt.Errorf("gitstore: parse fetched pack: %w", err)
	}
	if _, err := p.Parse(); err != nil {
		return fmt.Errorf("gitstore: parse fetched pack: %w", err)
	}
	objs := make([]newObject, 0, len(mem.ObjectStorage.Objects))
	for h, o := range mem.ObjectStorage.Objects {
		content, err := readEncoded(o)
		if err != nil {
			return fmt.Errorf("gitstore: fetched object %s: %w", h, err)
		}
		objs = append(objs, newObject{hash: h, typ: o.Type(), data: content})
	}
	// Blobs, then trees, then commits: a crash half-way leaves no commit
	// whose objects are missing (the commit is fetched again).
	rank := func(t plumbing.ObjectType) int {
		switch t {
		case plumbing.BlobObject:
			return 0
		case plumbing.TreeObject:
			return 1
		case plumbing.CommitObject:
			return 2
		}
		return 3
	}
	sort.SliceStable(objs, func(i, j int) bool { return rank(objs[i].typ) < rank(objs[j].typ) })
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if err := injected("fetch-objects", "write", filepath.Join(s.commonDir, "objects")); err != nil {
		return ioError(err)
	}
	return s.odb.write(objs)
}

// storeAsPack keeps a large fetched pack as a pack, with the index built
// here, written like a commit's pack (installPack: loopx temporary names,
// fsynced, renamed). An error that is not ErrIO means data is not a whole,
// self-contained pack.
func (s *Store) storeAsPack(data []byte) error {
	w := new(idxfile.Writer)
	p, err := packfile.NewParser(packfile.NewScanner(bytes.NewReader(data)), w)
	if err != nil {
		return fmt.Errorf("gitstore: parse fetched pack: %w", err)
	}
	sum, err := p.Parse()
	if err != nil {
		return fmt.Errorf("gitstore: parse fetched pack: %w", err)
	}
	idx, err := w.Index()
	if err != nil {
		return fmt.Errorf("gitstore: index fetched pack: %w", err)
	}
	var ib bytes.Buffer
	if _, err := idxfile.NewEncoder(&ib).Encode(idx); err != nil {
		return fmt.Errorf("gitstore: index fetched pack: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if err := injected("fetch-objects", "write", filepath.Join(s.commonDir, "objects", "pack")); err != nil {
		return ioError(err)
	}
	if err := s.odb.installPack(sum, data, ib.Bytes()); err != nil {
		return fmt.Errorf("gitstore: write fetched pack: %w", err)
	}
	s.odb.refresh()
	return nil
}

// goGitPush is the push of Push through go-git: it sends exactly the
// objects of the commits after old (objectsToPush) and the command "old
// new ref", after checking the advertised value is old.
func (s *Store) goGitPush(ctx context.Context, remote string, old, new Hash) (pushReply, error) {
	objs, err := s.objectsToPush(old, new)
	if err != nil {
		return pushReply{}, err
	}
	pack, _, _, err := encodePack(objs)
	if err != nil {
		return pushReply{}, err
	}
	t, ep, err := s.goGitEndpoint(remote)
	if err != nil {
		return pushReply{}, err
	}
	sess, err := t.NewReceivePackSession(ep, nil)
	if err != nil {
		return pushReply{}, classify(remote, "connect", err)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return pushReply{}, classify(remote, "list refs", err)
	}
	if ar == nil {
		ar = packp.NewAdvRefs()
	}
	if cur := s.advertised(ar); cur != old {
		return pushReply{stale: true, msg: fmt.Sprintf("%s is %s, expected %s", s.ref, shortHash(cur), shortHash(old))}, nil
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	var progress bytes.Buffer
	if ar.Capabilities.Supports(capability.Sideband64k) {
		req.Capabilities.Set(capability.Sideband64k)
		req.Progress = &progress
	} else if ar.Capabilities.Supports(capability.Sideband) {
		req.Capabilities.Set(capability.Sideband)
		req.Progress = &progress
	}
	req.Commands = []*packp.Command{{Name: plumbing.ReferenceName(s.ref), Old: old, New: new}}
	req.Packfile = io.NopCloser(bytes.NewReader(pack))
	hook("push-sending")
	rs, err := sess.ReceivePack(ctx, req)
	if rs != nil && rs.Error() == nil {
		// The server reported the update done (a close error after that
		// does not matter).
		return pushReply{applied: true}, nil
	}
	if err == nil {
		err = errors.New("no status report")
	}
	msg := strings.TrimSpace(err.Error())
	if remoteMsg := serverMessages(progress.String()); remoteMsg != "" {
		msg += " (" + remoteMsg + ")"
	}
	return pushReply{answered: rs != nil, msg: msg}, nil
}

// objectsToPush lists the objects a server holding old lacks to hold new:
// for each commit after old on new's first-parent chain, the commit and the
// trees and blobs that differ from its parent's. With old == ZeroHash the
// whole first-parent history is sent.
func (s *Store) objectsToPush(old, new Hash) ([]newObject, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	var out []newObject
	seen := map[Hash]bool{}
	add := func(h Hash) (bool, error) {
		if seen[h] {
			return false, nil
		}
		seen[h] = true
		t, data, err := s.odb.read(h)
		if err != nil {
			return false, err
		}
		out = append(out, newObject{hash: h, typ: t, data: data})
		return true, nil
	}
	for h := new; h != old; {
		if h.IsZero() {
			return nil, fmt.Errorf("gitstore: push: %s does not descend from %s", shortHash(new), shortHash(old))
		}
		c, err := s.readCommit(h)
		if err != nil {
			return nil, err
		}
		if _, err := add(h); err != nil {
			return nil, err
		}
		var parentTree Hash
		var parent Hash
		if len(c.parents) > 0 {
			parent = c.parents[0]
			if !parent.IsZero() {
				pc, err := s.readCommit(parent)
				if err != nil {
					return nil, err
				}
				parentTree = pc.tree
			}
		}
		if err := s.treeDiffObjects(c.tree, parentTree, add); err != nil {
			return nil, err
		}
		h = parent
	}
	return out, nil
}
