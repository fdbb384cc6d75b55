package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/approvalbot/approvalbot/aah"
)

// ErrInvalidDocument means a stored request's document no longer parses.
// Intake validated it, so only a bug or a hand-edited record gets here.
var ErrInvalidDocument = errors.New("store: stored request does not parse")

// Request parses the record's stored document (as accepted at intake: its
// deadlines may have passed since). It is the one place a stored request
// is parsed; an error wraps ErrInvalidDocument.
func (r Record) Request() (*aah.Request, error) {
	req, err := aah.Parse(r.Document, aah.ParseOptions{Stored: true})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidDocument, r.ID, err)
	}
	return req, nil
}

// Load reads a request with its parsed document. A document that does not
// parse is an error wrapping ErrInvalidDocument, returned with the record.
func (s *Store) Load(ctx context.Context, id string) (Record, *aah.Request, error) {
	rec, err := s.Get(ctx, id)
	if err != nil {
		return Record{}, nil, err
	}
	req, err := rec.Request()
	if err != nil {
		return rec, nil, err
	}
	return rec, req, nil
}
