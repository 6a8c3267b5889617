package memory

import (
	"context"
	"encoding/json"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
)

// MaxDayLen bounds the text of one diary day (all its entries).
const MaxDayLen = 500_000

// Entry is one diary entry.
type Entry struct {
	Time string `json:"time"` // RFC 3339, in the configured time zone
	Text string `json:"text"`
}

// Day is a diary day with its entries in the order they were written.
type Day struct {
	Date    string  `json:"date"`
	Entries []Entry `json:"entries"`
}

// body is how a day is stored: the entries verbatim, as JSON.
type body struct {
	Entries []Entry `json:"entries"`
}

// DiaryResult is write_diary's answer.
type DiaryResult struct {
	Date    string `json:"date"`
	Source  string `json:"source"`
	Entries int    `json:"entries"` // entries the day now holds
	Index   string `json:"index"`
	Chunks  int    `json:"chunks"`
	// IndexError is why the index is pending, as SaveResult's.
	IndexError error `json:"-"`
}

func (s *Service) today() string { return s.opt.Now().In(s.opt.Location).Format("2006-01-02") }

// WriteDiary appends an entry to a day (default today). Replacing the whole
// day needs replace=true, so an assistant cannot wipe a day by accident.
func (s *Service) WriteDiary(ctx context.Context, text, date, owner string, replace bool, sc Scope) (DiaryResult, error) {
	if err := validateValue(text); err != nil {
		return DiaryResult{}, err
	}
	if err := validateDate(date); err != nil {
		return DiaryResult{}, err
	}
	o, err := sc.owner(owner)
	if err != nil {
		return DiaryResult{}, err
	}
	if date == "" {
		date = s.today()
	}
	id := recall.DiaryID(o, date)
	entry := Entry{Time: s.opt.Now().In(s.opt.Location).Format(time.RFC3339), Text: text}
	var doc *recall.Document
	_, err = s.w.Update(ctx, id, func(cur *recall.Document) (*recall.Document, error) {
		var b body
		if cur != nil && !replace {
			if err := json.Unmarshal([]byte(cur.Source.Body), &b); err != nil {
				return nil, recall.WrapError(recall.EINTERNAL, err, "diary %s is unreadable", date)
			}
		}
		b.Entries = append(b.Entries, entry)
		total := 0
		for _, e := range b.Entries {
			total += utf8.RuneCountInString(e.Text)
		}
		if total > MaxDayLen {
			return nil, recall.Errorf(recall.ETOOLARGE, "diary %s would hold %d characters; a day holds at most %d", date, total, MaxDayLen)
		}
		raw, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		chunks := s.chunks("diary "+date, entryTexts(b.Entries))
		created := time.Time{}
		if cur != nil {
			created = cur.Source.CreatedAt
		}
		doc = &recall.Document{
			Source: recall.Source{ID: id, Kind: recall.KindDiary, Title: "diary " + date, Date: date, Owner: o,
				Category: "diary", ContentHash: recall.TextHash(string(raw)), Size: int64(len(raw)),
				ChunkCount: len(chunks), Body: string(raw), IndexState: s.initialState(), CreatedAt: created},
			Chunks: chunks,
		}
		return doc, nil
	})
	if err != nil {
		return DiaryResult{}, err
	}
	var b body
	_ = json.Unmarshal([]byte(doc.Source.Body), &b)
	res := DiaryResult{Date: date, Source: "diary/" + date, Entries: len(b.Entries), Chunks: len(doc.Chunks), Index: doc.Source.IndexState}
	// Vectors are made after the commit (embedding inside the transaction
	// would hold the write lock for the embedder's whole round trip); the
	// entry is searchable by text at once, and repair completes a failure.
	// Putting the vectors the day's texts already have as well is what
	// marks the day indexed when none is new (the same entry on another
	// day, or a day replaced by the same text).
	vecs, state, why := s.embedWithin(ctx, doc.Chunks)
	res.Index = s.putVectors(ctx, vecs, state, &why, res.Index)
	res.Index = s.settled(ctx, id, res.Index)
	res.IndexError = s.pendingBecause(res.Index, why)
	return res, nil
}

// initialState is the index state a freshly written day starts in.
func (s *Service) initialState() string {
	if !s.canEmbed() {
		return recall.IndexSkipped
	}
	return recall.IndexPending
}

// ReadDiary returns one day's entries.
func (s *Service) ReadDiary(ctx context.Context, date, owner string, sc Scope) (Day, error) {
	if date == "" {
		return Day{}, recall.Errorf(recall.EINVALID, "date is required (YYYY-MM-DD)")
	}
	if err := validateDate(date); err != nil {
		return Day{}, err
	}
	o, err := sc.owner(owner)
	if err != nil {
		return Day{}, err
	}
	src, err := s.st.Source(ctx, recall.DiaryID(o, date))
	if recall.IsNotFound(err) {
		return Day{}, notFound("no diary entries on " + date)
	}
	if err != nil {
		return Day{}, err
	}
	return dayOf(src)
}

// entryTexts are a day's entries' texts, the blocks its chunks are made of.
func entryTexts(es []Entry) []string {
	texts := make([]string, len(es))
	for i, e := range es {
		texts[i] = e.Text
	}
	return texts
}

func dayOf(src recall.Source) (Day, error) {
	var b body
	if err := json.Unmarshal([]byte(src.Body), &b); err != nil {
		return Day{}, recall.WrapError(recall.EINTERNAL, err, "diary %s is unreadable", src.Date)
	}
	return Day{Date: src.Date, Entries: b.Entries}, nil
}

// RecentDiary returns the days with entries among the last `days` calendar
// days (today included), newest first.
func (s *Service) RecentDiary(ctx context.Context, days int, owner string, sc Scope) ([]Day, error) {
	if days == 0 {
		days = 7
	}
	if days < 1 || days > MaxRecentDays {
		return nil, recall.Errorf(recall.EINVALID, "days must be between 1 and %d", MaxRecentDays)
	}
	o, err := sc.owner(owner)
	if err != nil {
		return nil, err
	}
	today := s.opt.Now().In(s.opt.Location)
	since := today.AddDate(0, 0, -(days - 1)).Format("2006-01-02")
	f := recall.Filter{Kinds: []recall.Kind{recall.KindDiary}, SourcePrefix: recall.DiaryPrefix(o),
		Since: since, Until: today.Format("2006-01-02")} // a day written ahead is not recent
	srcs, _, err := s.st.ListSources(ctx, recall.ListOptions{Filter: f, Limit: MaxRecentDays + 1})
	if err != nil {
		return nil, err
	}
	out := make([]Day, 0, len(srcs))
	for _, src := range srcs {
		d, err := dayOf(src)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	slices.Reverse(out)
	return out, nil
}
