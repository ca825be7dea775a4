package scheme

import "strconv"

// Name names the action for a timeline, a log or a golden script: the
// op, the range it works on, and the peer of a transfer, as in
// "allreduce grads[0:431080]", "send grads[0:10] to 3" or "clock".
func (a Action) Name() string {
	b := make([]byte, 0, 48)
	b = append(b, a.Op.String()...)
	if a.R.Hi > a.R.Lo {
		b = append(b, ' ')
		b = append(b, a.R.Buf.String()...)
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(a.R.Lo), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(a.R.Hi), 10)
		b = append(b, ']')
	}
	switch a.Op {
	case Send, Reduce:
		b = append(b, " to "...)
		b = strconv.AppendInt(b, int64(a.Peer), 10)
	case Recv, Broadcast:
		b = append(b, " from "...)
		b = strconv.AppendInt(b, int64(a.Peer), 10)
	}
	return string(b)
}
