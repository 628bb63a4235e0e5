package cli

import (
	"strconv"
	"strings"
)

// flagKind says how a flag takes its value.
type flagKind int

const (
	flagString flagKind = iota // --name value, last one wins
	flagList                   // --name value, repeatable
	flagBool                   // --name, or --name=true|false
)

// flagSpec is one flag of a command.
type flagSpec struct {
	Name  string // without the leading dashes
	Value string // placeholder shown in help; empty for booleans
	Help  string
	Kind  flagKind
}

// Global flags, accepted before the group and, for convenience, anywhere.
var globalFlags = []flagSpec{
	{Name: "relay", Value: "URL", Help: "relay base URL (env BUZZ_RELAY_URL, default http://localhost:3000)"},
	{Name: "private-key", Value: "KEY", Help: "secret key, hex or nsec (env BUZZ_PRIVATE_KEY; BUZZ_KEYFILE names a 0600 file as fallback)"},
	{Name: "auth-tag", Value: "JSON", Help: `NIP-OA owner attestation ["auth",owner,conditions,sig] (env BUZZ_AUTH_TAG)`},
	{Name: "format", Value: "json|compact", Help: "output shape of read commands that document a compact form"},
}

// parsed holds the flags and positional arguments of one invocation.
type parsed struct {
	vals map[string][]string
	args []string
	help bool
}

func (p *parsed) str(name string) string {
	v := p.vals[name]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func (p *parsed) has(name string) bool { _, ok := p.vals[name]; return ok }

func (p *parsed) list(name string) []string { return p.vals[name] }

func (p *parsed) boolean(name string) bool {
	v := p.str(name)
	return p.has(name) && v != "false"
}

// intFlag reads an integer flag; absent gives def.
func (p *parsed) intFlag(name string, def int64) (int64, error) {
	if !p.has(name) {
		return def, nil
	}
	n, err := strconv.ParseInt(p.str(name), 10, 64)
	if err != nil {
		return 0, userErr("--%s must be an integer: %q", name, p.str(name))
	}
	return n, nil
}

// nonNegative reads an integer flag that must be ≥ 0 (limits, timestamps).
func (p *parsed) nonNegative(name string, def int64) (int64, error) {
	n, err := p.intFlag(name, def)
	if err == nil && n < 0 {
		return 0, userErr("--%s must not be negative: %d", name, n)
	}
	return n, err
}

// parseArgs splits args by the command's flag table plus the global flags.
// A value flag always takes the next argument, even one starting with "-"
// (so `--content -` and `--content --x` work); "--" ends flag parsing.
func parseArgs(args []string, specs []flagSpec) (*parsed, error) {
	p := &parsed{vals: map[string][]string{}}
	find := func(name string) (flagSpec, bool) {
		for _, set := range [][]flagSpec{specs, globalFlags} {
			for _, f := range set {
				if f.Name == name {
					return f, true
				}
			}
		}
		return flagSpec{}, false
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			p.args = append(p.args, args[i+1:]...)
			break
		}
		if a == "-h" || a == "--help" {
			p.help = true
			continue
		}
		if !strings.HasPrefix(a, "--") || a == "-" {
			if strings.HasPrefix(a, "-") && a != "-" {
				return nil, userErr("unknown flag %q (flags are spelled --name)", a)
			}
			p.args = append(p.args, a)
			continue
		}
		name, val, hasVal := strings.Cut(a[2:], "=")
		f, ok := find(name)
		if !ok {
			return nil, userErr("unknown flag --%s", name)
		}
		switch {
		case f.Kind == flagBool:
			if !hasVal {
				val = "true"
			}
			if val != "true" && val != "false" {
				return nil, userErr("--%s takes no value (or =true/=false), got %q", name, val)
			}
		case !hasVal:
			if i+1 >= len(args) {
				return nil, userErr("--%s needs a value", name)
			}
			i++
			val = args[i]
		}
		if f.Kind != flagList {
			p.vals[name] = p.vals[name][:0]
		}
		p.vals[name] = append(p.vals[name], val)
	}
	return p, nil
}
