package aah

// The shapes of ids, names and dates that a decision request's fields must
// have, checked byte by byte: each is what a regular expression would say
// (shapes_test.go holds each to its expression, which its comment gives),
// without the regexp machine, which was a quarter of parsing a request at
// intake (issue #17). Every class is ASCII: a byte of a multi-byte
// character is in none.

func isDigit(c byte) bool      { return '0' <= c && c <= '9' }
func isUpper(c byte) bool      { return 'A' <= c && c <= 'Z' }
func isLower(c byte) bool      { return 'a' <= c && c <= 'z' }
func isAlnum(c byte) bool      { return isDigit(c) || isUpper(c) || isLower(c) }
func isUpperDigit(c byte) bool { return isDigit(c) || isUpper(c) }
func isLowerDigit(c byte) bool { return isDigit(c) || isLower(c) }

// shaped reports whether s is a byte in first, then between least and most
// bytes in rest (most < 0: no limit).
func shaped(s string, first, rest func(byte) bool, least, most int) bool {
	if len(s) < 1+least || (most >= 0 && len(s) > 1+most) || !first(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !rest(s[i]) {
			return false
		}
	}
	return true
}

// isRequestID: ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$
func isRequestID(s string) bool {
	return shaped(s, isAlnum, func(c byte) bool { return isAlnum(c) || c == '_' || c == '.' || c == ':' || c == '-' }, 0, 127)
}

// isDecisionID: ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$
func isDecisionID(s string) bool {
	return shaped(s, isAlnum, func(c byte) bool { return isAlnum(c) || c == '_' || c == '.' || c == '-' }, 0, 63)
}

// slackID reports whether s is a byte in first, then 2 to 20 of A-Z 0-9:
// the shape of Slack's ids.
func slackID(s string, first func(byte) bool) bool { return shaped(s, first, isUpperDigit, 2, 20) }

// isSlackUser: ^[UW][A-Z0-9]{2,20}$
func isSlackUser(s string) bool { return slackID(s, func(c byte) bool { return c == 'U' || c == 'W' }) }

// isUserGroup: ^S[A-Z0-9]{2,20}$
func isUserGroup(s string) bool { return slackID(s, func(c byte) bool { return c == 'S' }) }

// isChannelID: ^[CG][A-Z0-9]{2,20}$
func isChannelID(s string) bool { return slackID(s, func(c byte) bool { return c == 'C' || c == 'G' }) }

// isBareChannelName: ^[a-z0-9][a-z0-9_-]{0,79}$
func isBareChannelName(s string) bool {
	return shaped(s, isLowerDigit, func(c byte) bool { return isLowerDigit(c) || c == '_' || c == '-' }, 0, 79)
}

// isChannelName: ^#[a-z0-9][a-z0-9_-]{0,79}$
func isChannelName(s string) bool { return len(s) > 0 && s[0] == '#' && isBareChannelName(s[1:]) }

// isSlackChannel: ^(?:[CGD][A-Z0-9]{2,20}|#?[a-z0-9][a-z0-9_-]{0,79})$
func isSlackChannel(s string) bool {
	return slackID(s, func(c byte) bool { return c == 'C' || c == 'G' || c == 'D' }) ||
		isBareChannelName(s) || isChannelName(s)
}

// isRoleName: ^[A-Za-z0-9][A-Za-z0-9 _.-]*$
func isRoleName(s string) bool {
	return shaped(s, isAlnum, func(c byte) bool { return isAlnum(c) || c == ' ' || c == '_' || c == '.' || c == '-' }, 0, -1)
}

// isActionKey: ^[A-Za-z0-9_.:/-]{1,128}$
func isActionKey(s string) bool {
	c := func(c byte) bool { return isAlnum(c) || c == '_' || c == '.' || c == ':' || c == '/' || c == '-' }
	return shaped(s, c, c, 0, 127)
}

// isDateOnlyForm: ^[0-9]{4}-[0-9]{2}-[0-9]{2}$
func isDateOnlyForm(s string) bool { return len(s) == 10 && dateAt(s) }

// dateAt reports whether s starts with the shape of a calendar date,
// YYYY-MM-DD.
func dateAt(s string) bool {
	return len(s) >= 10 && digits(s[0:4]) && s[4] == '-' && digits(s[5:7]) && s[7] == '-' && digits(s[8:10])
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// isRFC3339Form: the shape of an RFC 3339 date-time (section 5.6):
// ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$
func isRFC3339Form(s string) bool {
	if len(s) < 20 || !dateAt(s) || s[10] != 'T' || !digits(s[11:13]) || s[13] != ':' || !digits(s[14:16]) ||
		s[16] != ':' || !digits(s[17:19]) {
		return false
	}
	rest := s[19:]
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && isDigit(rest[n]) {
			n++
		}
		if n == 1 {
			return false
		}
		rest = rest[n:]
	}
	switch {
	case rest == "Z":
		return true
	case len(rest) != 6 || (rest[0] != '+' && rest[0] != '-') || rest[3] != ':':
		return false
	}
	h1, h2, m1, m2 := rest[1], rest[2], rest[4], rest[5]
	return ((h1 == '0' || h1 == '1') && isDigit(h2) || h1 == '2' && '0' <= h2 && h2 <= '3') &&
		'0' <= m1 && m1 <= '5' && isDigit(m2)
}
