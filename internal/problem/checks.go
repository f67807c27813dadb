package problem

// ValidPort reports whether p is a TCP port.
func ValidPort(p int) bool { return p >= 1 && p <= 65535 }

// IsIdentifier reports whether s is 1-63 letters, digits, '.', '-' or
// '_': a name that every config language kha renders takes unquoted.
func IsIdentifier(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
