package web

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"
)

// funcs are the templates' helpers. None of them returns template.HTML:
// every value a page shows goes through html/template's escaping.
var funcs = template.FuncMap{
	"path":  pathOf,
	"short": shortRev,
	"rfc":   rfc,
	"left":  leftWords,
	"lapse": lapseWords,
	"join":  strings.Join,
	"f1":    func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
	"card":  func(goal string, now time.Time, t *Todo) cardData { return cardData{Goal: goal, Now: now, T: t} },
	"add":   func(a, b int) int { return a + b },
	"opWords": func(op string) string {
		return strings.NewReplacer(".", " ", "-", " ").Replace(op)
	},
	"endWords": endWords,
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"whenp": func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
}

// cardData is what the card template gets.
type cardData struct {
	Goal string
	Now  time.Time
	T    *Todo
}

// shortRev is a revision's first 12 characters.
func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// rfc formats a time (or *time.Time) for a datetime attribute ("" for none).
func rfc(v any) string {
	switch t := v.(type) {
	case time.Time:
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	case *time.Time:
		if t == nil {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	return ""
}

// leftWords is the countdown's text at now (the script keeps it running).
func leftWords(now time.Time, until *time.Time) string {
	if until == nil {
		return "no expiry"
	}
	d := until.Sub(now).Truncate(time.Second)
	if d <= 0 {
		return "expired " + durWords(-d) + " ago"
	}
	return durWords(d) + " left"
}

// durWords writes a duration as people read it: 2h 05m, 4m 09s, 12s.
func durWords(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s >= 86400:
		return fmt.Sprintf("%dd %02dh", s/86400, s%86400/3600)
	case s >= 3600:
		return fmt.Sprintf("%dh %02dm", s/3600, s%3600/60)
	case s >= 60:
		return fmt.Sprintf("%dm %02ds", s/60, s%60)
	}
	return fmt.Sprintf("%ds", s)
}

// lapseWords says why a holding is no longer in force.
func lapseWords(reason string) string {
	switch reason {
	case "expired":
		return "expired"
	case "owner_unregistered":
		return "its owner is no longer registered"
	case "owner_registered_again":
		return "its owner registered again since"
	case "owner_excluded":
		return "its owner was excluded from the todo"
	case "claim_held_by_other":
		return "another agent holds the todo's claim"
	case "todo_closed":
		return "the todo is closed"
	case "released":
		return "released"
	case "":
		return "not in force"
	}
	return strings.ReplaceAll(reason, "_", " ")
}
