// Package linestats is the tool's work, free of bindings so that `go test ./linestats` runs it natively.
package linestats

import (
	"bytes"
	"unicode/utf8"
)

// LongLine is a line wider than the limit.
type LongLine struct {
	Line  int `json:"line"`
	Width int `json:"width"`
}

// Stats describes the lines of a text file.
type Stats struct {
	Lines              int        `json:"lines"`
	Blank              int        `json:"blank"`
	TrailingWhitespace int        `json:"trailing_whitespace"`
	CRLF               int        `json:"crlf"`
	Tabs               int        `json:"tabs"`
	Longest            int        `json:"longest"`
	LongestLine        int        `json:"longest_line"`
	MeanWidth          float64    `json:"mean_width"`
	OverLimit          int        `json:"over_limit"`
	Long               []LongLine `json:"long"`
	FinalNewline       bool       `json:"final_newline"`
}

// progressEvery is how many lines pass between progress reports.
const progressEvery = 5000

// Analyze counts lines, blank lines, lines with trailing whitespace, CRLF endings and tab indents, and
// the widest lines (in characters), listing up to `show` lines wider than `maxWidth`.
func Analyze(data []byte, maxWidth, show int, progress func(done, total uint64)) Stats {
	var s Stats
	s.Long = []LongLine{}
	total := uint64(bytes.Count(data, []byte{'\n'}))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		total++
	}
	s.FinalNewline = len(data) > 0 && data[len(data)-1] == '\n'
	widths := 0
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		s.Lines++
		if n := len(line); n > 0 && line[n-1] == '\r' {
			s.CRLF++
			line = line[:n-1]
		}
		if len(bytes.TrimSpace(line)) == 0 {
			s.Blank++
		} else if c := line[len(line)-1]; c == ' ' || c == '\t' {
			s.TrailingWhitespace++
		}
		if len(line) > 0 && line[0] == '\t' {
			s.Tabs++
		}
		w := utf8.RuneCount(line)
		widths += w
		if w > s.Longest {
			s.Longest, s.LongestLine = w, s.Lines
		}
		if w > maxWidth {
			s.OverLimit++
			if len(s.Long) < show {
				s.Long = append(s.Long, LongLine{Line: s.Lines, Width: w})
			}
		}
		if s.Lines%progressEvery == 0 && progress != nil {
			progress(uint64(s.Lines), total)
		}
	}
	if s.Lines > 0 {
		s.MeanWidth = float64(widths) / float64(s.Lines)
	}
	return s
}
