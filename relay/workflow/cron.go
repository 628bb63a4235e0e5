package workflow

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Cron is a parsed cron expression: five fields (minute hour day month
// weekday) or six with seconds first. Each field is *, a number, a range
// a-b, a list, and any of these with /step. Day and weekday combine as in
// Vixie cron: when both are restricted, either may match.
type Cron struct {
	sec, min, hour, dom, month, dow uint64 // bit sets
	domStar, dowStar                bool
}

type cronField struct {
	name     string
	min, max int
}

var cronFields = []cronField{{"second", 0, 59}, {"minute", 0, 59}, {"hour", 0, 23}, {"day of month", 1, 31}, {"month", 1, 12}, {"day of week", 0, 7}}

// maxCronSearch bounds how far Next looks ahead: an expression that
// matches no time in five years (Feb 30) matches none.
const maxCronSearch = 5 * 366 * 24 * time.Hour

// ParseCron reads a cron expression.
func ParseCron(expr string) (*Cron, error) {
	fs := strings.Fields(expr)
	switch len(fs) {
	case 5:
		fs = append([]string{"0"}, fs...)
	case 6:
	default:
		return nil, fmt.Errorf("%q has %d fields, want 5 (minute hour day month weekday) or 6 (seconds first)", expr, len(fs))
	}
	var sets [6]uint64
	for i, f := range fs {
		set, err := parseCronField(f, cronFields[i])
		if err != nil {
			return nil, err
		}
		sets[i] = set
	}
	if sets[5]&(1<<7) != 0 { // 7 is Sunday too
		sets[5] |= 1
	}
	c := &Cron{sec: sets[0], min: sets[1], hour: sets[2], dom: sets[3], month: sets[4], dow: sets[5],
		domStar: fs[3] == "*" || fs[3] == "?", dowStar: fs[5] == "*" || fs[5] == "?"}
	if c.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, fmt.Errorf("%q matches no time", expr)
	}
	return c, nil
}

func parseCronField(s string, f cronField) (uint64, error) {
	var set uint64
	for _, part := range strings.Split(s, ",") {
		rng, step := part, 1
		if r, st, ok := strings.Cut(part, "/"); ok {
			n, err := strconv.Atoi(st)
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("%s %q: step %q is not a positive number", f.name, s, st)
			}
			rng, step = r, n
		}
		lo, hi := f.min, f.max
		if rng != "*" && rng != "?" {
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = strconv.Atoi(a); err != nil {
				return 0, fmt.Errorf("%s %q: %q is not a number", f.name, s, a)
			}
			hi = lo
			if isRange {
				if hi, err = strconv.Atoi(b); err != nil {
					return 0, fmt.Errorf("%s %q: %q is not a number", f.name, s, b)
				}
			} else if step > 1 {
				hi = f.max
			}
		}
		if lo < f.min || hi > f.max || lo > hi {
			return 0, fmt.Errorf("%s %q: outside %d-%d", f.name, s, f.min, f.max)
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

func has(set uint64, v int) bool { return set&(1<<v) != 0 }

func (c *Cron) dayMatches(t time.Time) bool {
	d, w := has(c.dom, t.Day()), has(c.dow, int(t.Weekday()))
	switch {
	case c.domStar && c.dowStar:
		return true
	case c.domStar:
		return w
	case c.dowStar:
		return d
	}
	return d || w
}

// Next returns the first time strictly after t that the expression
// matches, in t's location, or the zero time if there is none within
// maxCronSearch.
func (c *Cron) Next(t time.Time) time.Time {
	loc := t.Location()
	t = t.Truncate(time.Second).Add(time.Second)
	end := t.Add(maxCronSearch)
	for t.Before(end) {
		switch {
		case !has(c.month, int(t.Month())):
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, loc)
		case !c.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
		case !has(c.hour, t.Hour()):
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, loc)
		case !has(c.min, t.Minute()):
			t = t.Truncate(time.Minute).Add(time.Minute)
		case !has(c.sec, t.Second()):
			t = t.Add(time.Second)
		default:
			return t
		}
	}
	return time.Time{}
}
