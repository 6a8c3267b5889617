package server

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/recall-mcp/recall"
)

// sessionUse is what the front door knows of an open MCP session.
type sessionUse struct {
	owner string // the identity key that opened it
	busy  int    // its requests in flight, event streams (GET) included
	used  uint64 // sessTick when its last request ended, or it opened
}

// reserveSession takes a session slot for an initialize request of the
// identity key, or says why there is none: all sessions are taken, or the
// key holds its share and none of its sessions is idle. The slot is held
// (sessPending) until noteSession records the session the answer names,
// so concurrent initialize requests cannot all pass the count.
//
// A key at its share gets the slot of its least recently used idle
// session, which is closed: one with no request in flight and no event
// stream open. Clients built on the official TypeScript SDK (the MCP
// Inspector among them) close without ending their session (DELETE), so a
// token whose client connects for each task reached its share after that
// many tasks and was refused every new session until the idle ones timed
// out, 30 minutes later. A client still holding its session open keeps its
// event stream (GET) open, or is working; one that is not gets 404 on its
// next request, and Streamable HTTP has it initialize again.
func (s *Server) reserveSession(key string) error {
	victim, err := s.takeSlot(key)
	if err != nil {
		return err
	}
	if victim != "" {
		s.closeSession(victim)
	}
	return nil
}

func (s *Server) takeSlot(key string) (victim string, err error) {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	live := s.liveSessions()
	mine := s.sessPending[key]
	for sid, u := range s.sessions {
		switch {
		case !live[sid]:
			delete(s.sessions, sid) // ended
		case u.owner == key:
			mine++
			if u.busy == 0 && (victim == "" || u.used < s.sessions[victim].used) {
				victim = sid
			}
		}
	}
	pending := 0
	for _, n := range s.sessPending {
		pending += n
	}
	open := len(live) + pending
	switch {
	case mine < s.opt.SessionsPerToken:
		victim = ""
	case victim == "":
		return "", recall.Errorf(recall.EUNAVAILABLE, "this token has %d open MCP sessions, its limit, all of them in use; close one (DELETE /mcp) or retry later", mine)
	default:
		open-- // the victim's slot
	}
	if open >= s.opt.Sessions {
		return "", recall.Errorf(recall.EUNAVAILABLE, "too many open MCP sessions; retry later")
	}
	if victim != "" {
		delete(s.sessions, victim)
	}
	if s.sessPending == nil {
		s.sessPending = map[string]int{}
	}
	s.sessPending[key]++
	return victim, nil
}

// noteSession releases the slot reserveSession took and records who
// opened the session the initialize answer names, if any.
func (s *Server) noteSession(w http.ResponseWriter, key string) {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	if s.sessPending[key]--; s.sessPending[key] <= 0 {
		delete(s.sessPending, key)
	}
	if sid := w.Header().Get("Mcp-Session-Id"); sid != "" {
		if s.sessions == nil {
			s.sessions = map[string]*sessionUse{}
		}
		s.sessTick++
		s.sessions[sid] = &sessionUse{owner: key, used: s.sessTick}
	}
}

// useSession marks a request of session sid by the identity key in
// flight, until the function it returns is called. Ids of no session it
// knows, and a session of another key (the SDK refuses that request), are
// left alone: another token that learned a session id must not keep it
// busy or recently used, so deciding which of its owner's sessions ends
// next.
func (s *Server) useSession(sid, key string) (done func()) {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	u := s.sessions[sid]
	if u == nil || u.owner != key {
		return func() {}
	}
	u.busy++
	return func() {
		s.sessMu.Lock()
		defer s.sessMu.Unlock()
		s.sessTick++
		u.busy--
		u.used = s.sessTick
	}
}

// closeSession ends the session sid, if it is still open.
func (s *Server) closeSession(sid string) {
	for _, ms := range []*mcp.Server{s.users, s.admins} {
		for ss := range ms.Sessions() {
			if ss.ID() == sid {
				ss.Close()
				return
			}
		}
	}
}

func (s *Server) sessionCount() int { return len(s.liveSessions()) }

// liveSessions returns the ids of the open MCP sessions, users' and admins'.
func (s *Server) liveSessions() map[string]bool {
	live := map[string]bool{}
	for _, ms := range []*mcp.Server{s.users, s.admins} {
		for ss := range ms.Sessions() {
			live[ss.ID()] = true
		}
	}
	return live
}
