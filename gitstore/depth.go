package gitstore

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// depthCache is the side file of recent commits' depths.
const depthCache = "loopx-cache/depth"

// depthCacheSize bounds the remembered depths.
const depthCacheSize = 32

// Depth returns the number of commits on h's first-parent chain, h
// included (ZeroHash: 0): the position of h on the ref's history, which
// only grows as the ref moves forward. Recent depths are remembered in a
// side file, so the walk is the few commits since the last one asked
// (the first call on a long history walks it once).
func (s *Store) Depth(h Hash) (int64, error) {
	if h.IsZero() {
		return 0, nil
	}
	data, _ := s.ReadSideFile(depthCache)
	known := map[Hash]int64{}
	var order []Hash
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		hs, ds, ok := strings.Cut(sc.Text(), " ")
		d, err := strconv.ParseInt(ds, 10, 64)
		if !ok || err != nil || len(hs) != 40 {
			continue
		}
		hh := ParseHash(hs)
		known[hh] = d
		order = append(order, hh)
	}
	if d, ok := known[h]; ok {
		return d, nil
	}
	steps := int64(0)
	base := int64(0)
	err := s.Log(h, func(c CommitMeta) (bool, error) {
		if d, ok := known[c.Hash]; ok {
			base = d
			return false, nil
		}
		steps++
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	d := base + steps
	order = append(order, h)
	if len(order) > depthCacheSize {
		order = order[len(order)-depthCacheSize:]
	}
	known[h] = d
	var b bytes.Buffer
	for _, o := range order {
		fmt.Fprintf(&b, "%s %d\n", o, known[o])
	}
	_ = s.WriteSideFile(depthCache, b.Bytes(), false) // a cache: best effort
	return d, nil
}
