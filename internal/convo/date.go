package convo

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Layouts of full timestamps, tried before the looser word forms. A layout
// without seconds' fraction still accepts one when parsing.
var timestampLayouts = []string{
	time.RFC3339,
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05 -0700",
	"2006-01-02 15:04:05 -0700 MST",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
}

var months = map[string]time.Month{
	"jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3,
	"apr": 4, "april": 4, "may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7,
	"aug": 8, "august": 8, "sep": 9, "sept": 9, "september": 9, "oct": 10, "october": 10,
	"nov": 11, "november": 11, "dec": 12, "december": 12,
}

// Words a written date may carry that say nothing about which day it is.
var dateNoise = map[string]bool{
	"on": true, "at": true, "the": true, "of": true,
	"mon": true, "monday": true, "tue": true, "tues": true, "tuesday": true,
	"wed": true, "wednesday": true, "thu": true, "thur": true, "thurs": true, "thursday": true,
	"fri": true, "friday": true, "sat": true, "saturday": true, "sun": true, "sunday": true,
	"utc": true, "gmt": true,
}

var (
	numericDate = regexp.MustCompile(`^(\d{4})[-/.](\d{1,2})(?:[-/.](\d{1,2}))?$`)
	clockTime   = regexp.MustCompile(`^(\d{1,2}):(\d{2})(?::(\d{2}))?(am|pm|a\.m\.|p\.m\.)?$`)
	dayNumber   = regexp.MustCompile(`^(\d{1,2})(st|nd|rd|th)?$`)
	// clockZone is a time zone written after a clock time: a name (EST,
	// CEST, Z) or an offset (+02:00, -0700, UTC+2, GMT-05:30).
	clockZone = regexp.MustCompile(`^(?:[a-z]{1,5}|(?:utc|gmt)?([+-])(\d{1,2})(?::?(\d{2}))?)$`)
)

// parseDate reads the ways people date a transcript ("2023-05-08",
// "8 May 2023", "May 8, 2023", "1:56 pm on 8 May, 2023", "May 2023", ISO
// timestamps) and returns "YYYY-MM-DD", "YYYY-MM" or "YYYY", or "" when s is
// not a date. at is the moment when a time of day was written too, in the
// offset written with it (wallClock when none was); else it is zero. The
// date is the one written, never shifted by a zone (Parse dates one written
// in UTC in the reader's zone). A zone may follow the time ("11:30
// PM EST", "23:30 +02:00", "10:00 (UTC+2)"): an offset moves at, while a
// zone known only by name leaves at unknown (EST and the like name several
// offsets), and the day is kept either way.
//
// Numeric day-first or month-first forms ("08/05/2023") are refused: which
// of the two is meant cannot be told.
func parseDate(s string) (date string, at time.Time) {
	s = strings.TrimSpace(strings.Trim(strings.TrimSpace(s), `"'`))
	if s == "" {
		return "", time.Time{}
	}
	if t, ok := parseTimestamp(s); ok {
		return t.Format(time.DateOnly), t
	}
	if allDigits(s) && len(s) != 4 { // a year alone is read with the words below
		return digitDate(s)
	}
	var (
		year, day, hour, minute, second int
		month                           time.Month
		clock, pm, am                   bool
		zone                            string
	)
	fields := strings.Fields(strings.NewReplacer(",", " ", "(", " ", ")", " ").Replace(strings.ToLower(s)))
	afterClock := false // the field before was the time or its am/pm
	for _, f := range fields {
		prevClock := afterClock
		afterClock = false
		switch {
		case prevClock && zone == "" && (f == "utc" || f == "gmt"):
			zone = "z"
		case dateNoise[f] || dateNoise[strings.TrimSuffix(f, ".")]:
		case f == "am" || f == "a.m.":
			am, afterClock = true, prevClock
		case f == "pm" || f == "p.m.":
			pm, afterClock = true, prevClock
		case clockTime.MatchString(f):
			m := clockTime.FindStringSubmatch(f)
			if clock {
				return "", time.Time{}
			}
			clock, afterClock = true, true
			hour, _ = strconv.Atoi(m[1])
			minute, _ = strconv.Atoi(m[2])
			if m[3] != "" {
				second, _ = strconv.Atoi(m[3])
			}
			am = am || strings.HasPrefix(m[4], "a")
			pm = pm || strings.HasPrefix(m[4], "p")
		case numericDate.MatchString(f):
			m := numericDate.FindStringSubmatch(f)
			if year != 0 || month != 0 || day != 0 {
				return "", time.Time{}
			}
			year, _ = strconv.Atoi(m[1])
			mo, _ := strconv.Atoi(m[2])
			month = time.Month(mo)
			if m[3] != "" {
				day, _ = strconv.Atoi(m[3])
			}
		case months[strings.TrimSuffix(f, ".")] != 0:
			if month != 0 {
				return "", time.Time{}
			}
			month = months[strings.TrimSuffix(f, ".")]
		case len(f) == 4 && allDigits(f):
			if year != 0 {
				return "", time.Time{}
			}
			year, _ = strconv.Atoi(f)
		case dayNumber.MatchString(f):
			if day != 0 {
				return "", time.Time{}
			}
			day, _ = strconv.Atoi(dayNumber.FindStringSubmatch(f)[1])
		case prevClock && zone == "" && clockZone.MatchString(f):
			zone = f
		default:
			return "", time.Time{}
		}
	}
	if year == 0 || (day != 0 && month == 0) || (am && pm) || month > 12 {
		return "", time.Time{}
	}
	if month == 0 {
		return fmt.Sprintf("%04d", year), time.Time{}
	}
	if day == 0 {
		return fmt.Sprintf("%04d-%02d", year, month), time.Time{}
	}
	if t := time.Date(year, month, day, 0, 0, 0, 0, time.UTC); t.Day() != day || t.Month() != month {
		return "", time.Time{} // 31 April and the like
	}
	date = fmt.Sprintf("%04d-%02d-%02d", year, month, day)
	if !clock {
		return date, time.Time{}
	}
	if am || pm {
		if hour < 1 || hour > 12 {
			return date, time.Time{}
		}
		hour %= 12
		if pm {
			hour += 12
		}
	}
	if hour > 23 || minute > 59 || second > 59 {
		return date, time.Time{}
	}
	loc := wallClock
	switch zone {
	case "":
	case "z":
		loc = time.UTC
	default:
		m := clockZone.FindStringSubmatch(zone)
		h, _ := strconv.Atoi(m[2])
		mins, _ := strconv.Atoi(m[3])
		if m[1] == "" || h > 14 || mins > 59 {
			return date, time.Time{} // a zone by name, or no offset there is
		}
		off := h*3600 + mins*60
		if m[1] == "-" {
			off = -off
		}
		loc = time.FixedZone("", off)
	}
	return date, time.Date(year, month, day, hour, minute, second, 0, loc)
}

// digitDate reads a date written as digits alone: seconds (10 digits) or
// milliseconds (13) since the epoch, as note apps and exporters write a
// creation time, a moment in UTC; or YYYYMMDD, ISO 8601's basic form.
func digitDate(s string) (date string, at time.Time) {
	switch len(s) {
	case 8:
		if t, err := time.Parse("20060102", s); err == nil {
			return t.Format(time.DateOnly), time.Time{}
		}
	case 10, 13:
		n, _ := strconv.ParseInt(s, 10, 64)
		sec := float64(n)
		if len(s) == 13 {
			sec /= 1000
		}
		if t := unixTime(sec); !t.IsZero() {
			return t.Format(time.DateOnly), t
		}
	}
	return "", time.Time{}
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// unixTime turns seconds since the epoch, as exports write them, into a time;
// values outside years 1970..9999 (or NaN) are treated as unknown.
func unixTime(sec float64) time.Time {
	if !(sec > 0 && sec < 253402300800) {
		return time.Time{}
	}
	// float64 holds these to about a microsecond; finer digits are noise.
	return time.UnixMicro(int64(math.Round(sec * 1e6))).UTC()
}

// wallClock is the location of a time written without a zone: read as if
// in UTC, but known to be a clock's reading, not a moment written in UTC
// (writtenInUTC), so that its day is the day written. It is named: the
// time package hands out one shared location for each unnamed whole-hour
// offset, which a timestamp written with +00:00 gets.
var wallClock = time.FixedZone("wall clock", 0)

// writtenInUTC reports whether t is a moment written in UTC: seconds since
// the epoch (unixTime), or a timestamp with the zone Z or an offset of 0.
func writtenInUTC(t time.Time) bool {
	if t.IsZero() || t.Location() == wallClock {
		return false
	}
	_, off := t.Zone()
	return off == 0
}

// parseTimestamp reads s in one of timestampLayouts. A time without a zone
// is in wallClock.
func parseTimestamp(s string) (time.Time, bool) {
	for _, layout := range timestampLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			if !strings.Contains(layout, "Z07") && !strings.Contains(layout, "-0700") {
				t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), wallClock)
			}
			return t, true
		}
	}
	return time.Time{}, false
}

// isoTime parses the text timestamps of Claude exports and chat logs: RFC
// 3339, and the forms other tools write (a space for the T, no zone, as
// Python's isoformat() gives for a naive time), the same ones, read the
// same way, as a markdown transcript's date line. The time keeps the offset
// it was written with (wallClock when none was), so that dateOf gives the day
// written, as a markdown date line has it; Parse hands conversations on
// with their times in UTC. A malformed one is unknown rather than an
// error, since it never changes which messages a conversation has.
func isoTime(s string) time.Time {
	t, ok := parseTimestamp(strings.TrimSpace(s))
	if !ok || t.Year() > 9999 {
		return time.Time{}
	}
	return t
}

// stamp is a timestamp field of an export, read leniently: seconds (or
// milliseconds) since the epoch or text (isoTime), whichever the export
// wrote (ChatGPT documents seconds and Claude text, and both have been seen
// the other way round). A timestamp never changes which messages a
// conversation has, so one that cannot be read, or is of another JSON type,
// is unknown (zero) rather than an error that would reject the whole export.
type stamp time.Time

func (s *stamp) UnmarshalJSON(b []byte) error {
	*s = stamp(rawTime(b))
	return nil
}

// dateOf is the calendar day of t where it was written: in the offset of a
// text timestamp (isoTime), in UTC for seconds since the epoch (Parse moves
// a moment written in UTC to the reader's zone); "" for the zero time.
func dateOf(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.DateOnly)
}
