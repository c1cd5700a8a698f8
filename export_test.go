package loopx

// RecordCacheLen is how many decoded records the Store's record cache holds.
func (s *Store) RecordCacheLen() int { return s.derived.Records().Len() }
