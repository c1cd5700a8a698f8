package lease

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strings"
)

// The tree layout of the state ref. Large sets fan out by a hash prefix so the
// trees one mutation rewrites stay small (about 256 entries at most at 10,000
// todos and 100,000 receipts):
//
//	loopx.yaml                                   store meta (format version)
//	goals/<goal>/goal.yaml
//	goals/<goal>/TODO.md                         the board (projection)
//	goals/<goal>/agents/<agent>.yaml
//	goals/<goal>/todos/<h0h1>/<todo>.yaml         h = sha256(todo id) in hex
//	goals/<goal>/leases/<h0h1>/<todo>.yaml
//	goals/<goal>/receipts/<r0r1>/<r2r3>/<receipt id>.yaml
const (
	MetaPath = "loopx.yaml"
	GoalsDir = "goals"
)

func bucket(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:1])
}

// GoalDir is the folder of one goal.
func GoalDir(goal string) string { return GoalsDir + "/" + goal }

// GoalPath is the goal record.
func GoalPath(goal string) string { return GoalDir(goal) + "/goal.yaml" }

// BoardPath is the goal's Markdown board.
func BoardPath(goal string) string { return GoalDir(goal) + "/TODO.md" }

// AgentsDir holds the goal's agent registrations.
func AgentsDir(goal string) string { return GoalDir(goal) + "/agents" }

// AgentPath is one agent registration.
func AgentPath(goal, agent string) string { return AgentsDir(goal) + "/" + agent + ".yaml" }

// TodosDir holds the goal's todos.
func TodosDir(goal string) string { return GoalDir(goal) + "/todos" }

// TodoPath is one todo.
func TodoPath(goal, todo string) string {
	return TodosDir(goal) + "/" + bucket(todo) + "/" + todo + ".yaml"
}

// LeasesDir holds the goal's task leases.
func LeasesDir(goal string) string { return GoalDir(goal) + "/leases" }

// LeasePath is the lease of one todo.
func LeasePath(goal, todo string) string {
	return LeasesDir(goal) + "/" + bucket(todo) + "/" + todo + ".yaml"
}

// ReceiptsDir holds the goal's receipts.
func ReceiptsDir(goal string) string { return GoalDir(goal) + "/receipts" }

// ReceiptPath is one receipt; id is a 64-digit hex digest.
func ReceiptPath(goal, id string) string {
	return ReceiptsDir(goal) + "/" + id[:2] + "/" + id[2:4] + "/" + id + ".yaml"
}

// RecordID returns the id a record file name carries ("todo_x.yaml" → "todo_x").
func RecordID(p string) string { return strings.TrimSuffix(path.Base(p), ".yaml") }
