package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"buzzbox/agent/llm"
)

// loadHints reads AGENTS.md from $HOME, then every directory from the git
// root (the nearest ancestor of cwd holding .git, a directory or a worktree
// file) down to cwd, joined by blank lines and capped at maxHintsBytes.
func loadHints(cwd, home string) string {
	var chain []string
	root := ""
	for d := filepath.Clean(cwd); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			root = d
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if root == "" {
		chain = []string{filepath.Clean(cwd)}
	} else {
		for d := filepath.Clean(cwd); ; d = filepath.Dir(d) {
			chain = append([]string{d}, chain...)
			if d == root {
				break
			}
		}
	}
	if home != "" {
		h := filepath.Clean(home)
		found := false
		for _, d := range chain {
			found = found || d == h
		}
		if !found {
			chain = append([]string{h}, chain...)
		}
	}
	var b strings.Builder
	for _, d := range chain {
		data, err := readCapped(filepath.Join(d, "AGENTS.md"), maxHintsBytes)
		if err != nil || len(data) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		if b.Len()+len(data) > maxHintsBytes {
			b.WriteString(cutHead(string(data), maxHintsBytes-b.Len()))
			break
		}
		b.Write(data)
	}
	return b.String()
}

// skill is one discovered skill: metadata only, bodies load on demand.
type skill struct {
	name, description string
	dir               string   // canonical path
	files             []string // supporting files, relative, slash-separated, sorted
}

// discoverSkills scans the project skill dirs, then ~/.agents/skills; the
// first skill of a name wins, so the project beats the global layer.
func discoverSkills(cwd, home string) []skill {
	roots := []string{
		filepath.Join(cwd, ".agents", "skills"),
		filepath.Join(cwd, ".goose", "skills"),
		filepath.Join(cwd, ".claude", "skills"),
	}
	if home != "" {
		roots = append(roots, filepath.Join(home, ".agents", "skills"))
	}
	var out []skill
	seen := map[string]bool{}
	for _, root := range roots {
		entries, err := os.ReadDir(root)
		if err != nil {
			continue
		}
		var dirs []string
		for _, e := range entries {
			dirs = append(dirs, filepath.Join(root, e.Name()))
		}
		sort.Strings(dirs)
		for i, d := range dirs {
			if i >= maxSkillDirs {
				break
			}
			st, err := os.Stat(d) // follows symlinks
			if err != nil || !st.IsDir() {
				continue
			}
			sk, ok := readSkill(d)
			if !ok || seen[sk.name] {
				continue
			}
			seen[sk.name] = true
			out = append(out, sk)
		}
	}
	return out
}

func readSkill(dir string) (skill, bool) {
	data, err := readCapped(filepath.Join(dir, "SKILL.md"), maxSkillMDBytes)
	if err != nil {
		return skill{}, false
	}
	meta, _, ok := frontmatter(string(data))
	if !ok || strings.TrimSpace(meta["name"]) == "" {
		return skill{}, false
	}
	canon, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return skill{}, false
	}
	sk := skill{name: strings.TrimSpace(meta["name"]), description: strings.TrimSpace(meta["description"]), dir: canon}
	visited := map[string]bool{}
	var walk func(abs, rel string)
	walk = func(abs, rel string) {
		real, err := filepath.EvalSymlinks(abs)
		if err != nil || visited[real] {
			return
		}
		visited[real] = true
		entries, err := os.ReadDir(abs)
		if err != nil {
			return
		}
		for _, e := range entries {
			if len(sk.files) >= maxSkillFiles {
				return
			}
			p := filepath.Join(abs, e.Name())
			r := e.Name()
			if rel != "" {
				r = rel + "/" + e.Name()
			}
			st, err := os.Stat(p)
			if err != nil {
				continue
			}
			if st.IsDir() {
				if _, err := os.Stat(filepath.Join(p, "SKILL.md")); err == nil {
					continue // a nested skill owns its own files
				}
				walk(p, r)
				continue
			}
			if e.Name() != "SKILL.md" {
				sk.files = append(sk.files, r)
			}
		}
	}
	walk(dir, "")
	sort.Strings(sk.files)
	return sk, true
}

// frontmatter splits "---\n<yaml>\n---" from body. Only a flat mapping of
// scalar values is understood; nested or list lines are skipped.
func frontmatter(s string) (map[string]string, string, bool) {
	if !strings.HasPrefix(s, "---\n") {
		return nil, "", false
	}
	rest := s[4:]
	end := strings.Index(rest, "\n---")
	if end < 0 {
		if strings.HasPrefix(rest, "---") {
			end = -1
		} else {
			return nil, "", false
		}
	}
	block := ""
	body := ""
	if end >= 0 {
		block = rest[:end]
		body = rest[end+4:]
	} else {
		body = rest[3:]
	}
	if i := strings.IndexByte(body, '\n'); i >= 0 {
		body = body[i+1:]
	} else {
		body = ""
	}
	meta := map[string]string{}
	for _, line := range strings.Split(block, "\n") {
		if line == "" || line[0] == ' ' || line[0] == '\t' || line[0] == '#' || line[0] == '-' {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, "", false
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"') {
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			}
		} else if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			v = strings.ReplaceAll(v[1:len(v)-1], "''", "'")
		}
		meta[strings.TrimSpace(k)] = v
	}
	return meta, body, true
}

// instructionsSection is appended to the system prompt when hints or skills exist.
func instructionsSection(hints string, skills []skill) string {
	if hints == "" && len(skills) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("# Additional Instructions\n")
	if hints != "" {
		b.WriteString("\n## Project Hints\n" + hints + "\n")
	}
	if len(skills) > 0 {
		b.WriteString("\n## Available Skills\n")
		for _, s := range skills {
			fmt.Fprintf(&b, "- %s: %s\n", s.name, s.description)
		}
		b.WriteString("\nUse the `load_skill` tool to read the full content of a skill before using it.\n")
	}
	return b.String()
}

const loadSkillName = "load_skill"

func loadSkillTool() llm.Tool {
	return llm.Tool{Name: loadSkillName,
		Description: "Load a skill's instructions. The system prompt lists skill names only; call this with a skill name to read its full content, or with \"skill-name/relative/path\" to load one of its supporting files.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"skill name, or skill-name/relative/path of a supporting file"}},"required":["name"]}`)}
}

// runLoadSkill runs the built-in tool; errors come back as is_error text.
func runLoadSkill(skills []skill, args json.RawMessage) (string, bool) {
	var a struct {
		Name *string `json:"name"`
	}
	if json.Unmarshal(args, &a) != nil || a.Name == nil || *a.Name == "" {
		return `load_skill: missing required argument "name"`, true
	}
	name := strings.ReplaceAll(*a.Name, "\\", "/")
	skillName, rel, hasRel := strings.Cut(name, "/")
	var sk *skill
	var names []string
	for i := range skills {
		names = append(names, skills[i].name)
		if skills[i].name == skillName {
			sk = &skills[i]
		}
	}
	if sk == nil {
		return fmt.Sprintf("load_skill: skill %q not found. Available: [%s]", skillName, strings.Join(names, ", ")), true
	}
	if !hasRel {
		data, err := readCapped(filepath.Join(sk.dir, "SKILL.md"), maxSkillMDBytes)
		if err != nil {
			return "load_skill: " + err.Error(), true
		}
		_, body, _ := frontmatter(string(data))
		out := strings.TrimLeft(body, "\n")
		if len(sk.files) > 0 {
			out += "\n\n## Supporting Files\n\n"
			for _, f := range sk.files {
				out += fmt.Sprintf("- %s (load_skill(name: \"%s/%s\"))\n", f, sk.name, f)
			}
		}
		return cutHead(out, maxSkillBodyBytes), false
	}
	if len(sk.files) == 0 {
		return fmt.Sprintf("load_skill: skill %q has no supporting files.", sk.name), true
	}
	found := false
	for _, f := range sk.files {
		found = found || f == rel
	}
	if !found {
		return fmt.Sprintf("load_skill: file %q not found in skill %q. Available: [%s]", rel, sk.name, strings.Join(sk.files, ", ")), true
	}
	real, err := filepath.EvalSymlinks(filepath.Join(sk.dir, filepath.FromSlash(rel)))
	if err != nil {
		return "load_skill: " + err.Error(), true
	}
	if r, err := filepath.Rel(sk.dir, real); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return fmt.Sprintf("load_skill: refusing to load %q: it resolves outside the skill directory", rel), true
	}
	f, err := os.Open(real)
	if err != nil {
		return "load_skill: " + err.Error(), true
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSkillFileRead))
	if err != nil {
		return "load_skill: " + err.Error(), true
	}
	out := fmt.Sprintf("# Loaded: %s/%s\n\n%s\n\n---\nFile loaded into context.", sk.name, rel, data)
	return cutHead(out, maxSkillBodyBytes), false
}
