// Package export_toolhost_plugin_tool implements the contract's exported `tool` interface for the
// `line_stats` example plugin (Go): line statistics of a text file in a granted directory, the things a
// reviewer looks for (long lines, trailing whitespace, CRLF endings, tab indents, a missing final newline).
//
// `wit-bindgen go` generates the rest of the module `wit_component` at build time (see build.sh): the
// package name and the signatures below are what its generated main package calls. The plugin does no
// path confinement of its own beyond os.Root: it sees only the directories the host preopens for it (a
// granted directory is mounted at ".", and paths are relative to it).
package export_toolhost_plugin_tool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"wit_component/linestats"
	"wit_component/toolhost_plugin_host"
	types "wit_component/toolhost_plugin_types"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

// maxFileBytes bounds what is read into linear memory.
const maxFileBytes = 64 << 20

const inputSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "The text file, relative to the granted directory."},
    "max_width": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 100,
      "description": "Lines wider than this many characters are counted and listed."},
    "show": {"type": "integer", "minimum": 0, "maximum": 100, "default": 10,
      "description": "List at most this many of the long lines."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

const outputSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "lines": {"type": "integer"}, "blank": {"type": "integer"},
    "trailing_whitespace": {"type": "integer"}, "crlf": {"type": "integer"}, "tabs": {"type": "integer"},
    "longest": {"type": "integer"}, "longest_line": {"type": "integer"}, "mean_width": {"type": "number"},
    "over_limit": {"type": "integer"},
    "long": {"type": "array", "items": {"type": "object", "properties": {
      "line": {"type": "integer"}, "width": {"type": "integer"}}}},
    "final_newline": {"type": "boolean"}
  },
  "required": ["path", "lines", "blank", "longest", "over_limit", "long", "final_newline"]
}`

type input struct {
	Path     string `json:"path"`
	MaxWidth *int   `json:"max_width"`
	Show     *int   `json:"show"`
}

type result = witTypes.Result[types.ToolOutput, types.ToolError]

func invalid(format string, args ...any) result {
	return witTypes.Err[types.ToolOutput](types.MakeToolErrorInvalidInput(fmt.Sprintf(format, args...)))
}

func failed(format string, args ...any) result {
	return witTypes.Err[types.ToolOutput](types.MakeToolErrorFailed(fmt.Sprintf(format, args...)))
}

// Describe lists the plugin's one tool.
func Describe() []types.ToolSpec {
	return []types.ToolSpec{{
		Name:  "line_stats",
		Title: witTypes.Some("Line statistics"),
		Description: "Line statistics of a text file: lines, blank lines, the longest line, the mean width, " +
			"lines wider than max_width (listed with their numbers), trailing whitespace, CRLF endings, " +
			"tab indents, and whether the file ends with a newline.",
		InputSchema:       inputSchema,
		OutputSchema:      witTypes.Some(outputSchema),
		Hints:             types.ToolHints_ReadOnly | types.ToolHints_Idempotent,
		PermissionSubject: witTypes.Some("/path"),
	}}
}

// Call runs a tool by name with its input as JSON text.
func Call(name string, inputJSON string) result {
	if name != "line_stats" {
		return invalid("unknown tool '%s'; this plugin provides only 'line_stats'", name)
	}
	var in input
	if err := json.Unmarshal([]byte(inputJSON), &in); err != nil {
		return invalid("the input is not the expected object: %v", err)
	}
	// The schema cannot say "relative": an absolute path names nothing the host grants.
	if strings.HasPrefix(in.Path, "/") {
		return invalid("'path' must be relative to the granted directory, not absolute: %q", in.Path)
	}
	maxWidth, show := 100, 10
	if in.MaxWidth != nil {
		maxWidth = *in.MaxWidth
	}
	if in.Show != nil {
		show = *in.Show
	}
	data, err := readFile(in.Path)
	if err != nil {
		return failed("cannot read '%s': %v", in.Path, err)
	}
	progress := func(done, total uint64) {
		toolhost_plugin_host.Progress(done, witTypes.Some(total), fmt.Sprintf("%d of %d lines", done, total))
	}
	s := linestats.Analyze(data, maxWidth, show, progress)
	progress(uint64(s.Lines), uint64(s.Lines))
	toolhost_plugin_host.Log(toolhost_plugin_host.LogLevel_Debug, fmt.Sprintf("line_stats: %s: %d lines", in.Path, s.Lines))

	structured, err := json.Marshal(struct {
		Path string `json:"path"`
		linestats.Stats
	}{in.Path, s})
	if err != nil {
		return failed("cannot encode the result: %v", err)
	}
	return witTypes.Ok[types.ToolOutput, types.ToolError](types.ToolOutput{
		Content:    summary(in.Path, maxWidth, s),
		Structured: witTypes.Some(string(structured)),
	})
}

// readFile reads a file below the granted directory. Not os.ReadFile: Go's wasip1 port resolves a
// relative path against the first preopen's *name*, and expects names like "/data"; toolhost mounts a
// grant at ".", where that lookup fails with EBADF. os.OpenRoot(".") opens the preopen itself, and the
// Root resolves paths relative to it (refusing any that climb out, as the host would).
func readFile(path string) ([]byte, error) {
	root, err := os.OpenRoot(".")
	if err != nil {
		return nil, fmt.Errorf("no directory is granted to this plugin (%v)", unwrap(err))
	}
	defer root.Close()
	info, err := root.Stat(path)
	if err != nil {
		return nil, unwrap(err)
	}
	if info.IsDir() {
		return nil, errors.New("it is a directory, not a file")
	}
	if info.Size() > maxFileBytes {
		return nil, fmt.Errorf("it is larger than %d MiB", maxFileBytes>>20)
	}
	data, err := root.ReadFile(path)
	return data, unwrap(err)
}

// unwrap drops the *PathError wrapper: the message names the path already.
func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func summary(path string, maxWidth int, s linestats.Stats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s (%d blank), longest %d characters (line %d), mean width %.1f\n",
		path, plural(s.Lines, "line"), s.Blank, s.Longest, s.LongestLine, s.MeanWidth)
	fmt.Fprintf(&b, "%s wider than %d", plural(s.OverLimit, "line"), maxWidth)
	for i, l := range s.Long {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "line %d (%d)", l.Line, l.Width)
	}
	if s.OverLimit > len(s.Long) {
		b.WriteString(", ...")
	}
	fmt.Fprintf(&b, "\ntrailing whitespace on %s, CRLF endings on %d, tab indents on %d",
		plural(s.TrailingWhitespace, "line"), s.CRLF, s.Tabs)
	if !s.FinalNewline && s.Lines > 0 {
		b.WriteString("\nno newline at the end of the file")
	}
	return b.String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
