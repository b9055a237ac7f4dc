package linestats

import "testing"

func TestAnalyzeCountsWhatReviewersLookFor(t *testing.T) {
	s := Analyze([]byte("short\r\n\n\tindented \nthis one is long\n"), 10, 5, nil)
	if s.Lines != 4 || s.Blank != 1 || s.CRLF != 1 || s.Tabs != 1 || s.TrailingWhitespace != 1 {
		t.Fatalf("counts: %+v", s)
	}
	if s.Longest != 16 || s.LongestLine != 4 || s.OverLimit != 1 || len(s.Long) != 1 || !s.FinalNewline {
		t.Fatalf("widths: %+v", s)
	}
}

func TestAnalyzeCountsALastLineWithoutNewline(t *testing.T) {
	s := Analyze([]byte("a\nb"), 80, 5, nil)
	if s.Lines != 2 || s.FinalNewline {
		t.Fatalf("%+v", s)
	}
}
