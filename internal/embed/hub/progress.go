package hub

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// IsTerminal reports whether f is a character device (a terminal), where
// progress is drawn as a bar rewritten in place.
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// reportEvery is how often progress is written while bytes flow: often
// enough for a bar to look alive, rarely enough for a log to stay short.
func (p *Puller) reportEvery() time.Duration {
	if p.Terminal {
		return 200 * time.Millisecond
	}
	return 5 * time.Second
}

// report writes one progress update for file f of model name: have of
// total bytes (total 0: unknown), at bytesPerSec; done ends the file.
func (p *Puller) report(name string, f File, have, total int64, bytesPerSec float64, done bool) {
	if p.Progress == nil {
		return
	}
	line := progressLine(name, f.Path, have, total, bytesPerSec, done)
	if p.Terminal {
		end := ""
		if done {
			end = "\n"
		}
		// \r and a clear-to-end-of-line redraw the bar in place.
		fmt.Fprintf(p.Progress, "\r%s\x1b[K%s", line, end)
		return
	}
	io.WriteString(p.Progress, line+"\n")
}

func progressLine(name, file string, have, total int64, bytesPerSec float64, done bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s ", name, file)
	if total > 0 {
		const width = 24
		filled := int(float64(width) * float64(min(have, total)) / float64(total))
		fmt.Fprintf(&b, "[%s%s] %3d%% ", strings.Repeat("=", filled), strings.Repeat(" ", width-filled), 100*min(have, total)/total)
		fmt.Fprintf(&b, "%s / %s", formatBytes(have), formatBytes(total))
	} else {
		b.WriteString(formatBytes(have))
	}
	switch {
	case done:
		b.WriteString("  done")
	case bytesPerSec > 0:
		fmt.Fprintf(&b, "  %s/s", formatBytes(int64(bytesPerSec)))
		if total > have {
			eta := time.Duration(float64(total-have) / bytesPerSec * float64(time.Second))
			fmt.Fprintf(&b, "  ETA %s", formatETA(eta))
		}
	}
	return b.String()
}

func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func formatETA(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}
