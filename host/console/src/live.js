// The live state shared by every tab: waiting questions, running and recent calls, kept current by
// one EventSource. On every (re)connection the lists are fetched again, so nothing missed while
// the stream was down stays missing. A fetched list may be older than events that arrived while it
// was on its way: those events are applied again on top of it, in the stream's order.
import { useEffect, useReducer, useState } from 'preact/hooks';
import { get } from './api.js';
import { announce } from './notice.js';

export const RECENT_CAP = 200;

const empty = { approvals: [], running: [], recent: [], answers: [] };
const ANSWERS_CAP = 10;

function without(list, key, id) {
  return list.filter((item) => item[key] !== id);
}

function reduce(state, action) {
  switch (action.type) {
    case 'lists': {
      const lists = { ...state, approvals: action.approvals, running: action.running, recent: action.recent.slice(0, RECENT_CAP) };
      return action.since.reduce(reduce, lists);
    }
    case 'question': {
      const q = action.question;
      const running = state.running.map((r) => (r.call_id === q.call_id ? { ...r, waiting: true } : r));
      return { ...state, running, approvals: [...without(state.approvals, 'id', q.id), q] };
    }
    case 'answered': {
      const q = state.approvals.find((a) => a.id === action.id);
      const running = q
        ? state.running.map((r) => (r.call_id === q.call_id ? { ...r, waiting: false } : r))
        : state.running;
      // This operator's own answer removes the card at once; the event that follows keeps its tool.
      const earlier = state.answers.find((a) => a.id === action.id);
      const tool = q ? q.tool : earlier && earlier.tool;
      const note = action.note && { ...action.note, tool };
      const answers = note ? [note, ...without(state.answers, 'id', note.id)].slice(0, ANSWERS_CAP) : state.answers;
      return { ...state, running, answers, approvals: without(state.approvals, 'id', action.id) };
    }
    case 'started':
      return { ...state, running: [...without(state.running, 'call_id', action.call.call_id), action.call] };
    case 'ended': {
      const r = action.record;
      const recent = [r, ...without(state.recent, 'call_id', r.call_id)].slice(0, RECENT_CAP);
      return { ...state, running: without(state.running, 'call_id', r.call_id), recent };
    }
    default:
      return state;
  }
}

function parse(event) {
  try {
    return JSON.parse(event.data);
  } catch (_) {
    return null;
  }
}

/** Live lists while `enabled` (signed in); `status` is connecting | live | reconnecting | closed. */
export function useLive(enabled) {
  const [state, dispatch] = useReducer(reduce, empty);
  const [status, setStatus] = useState('connecting');
  const [error, setError] = useState('');
  const [generation, setGeneration] = useState(0);

  useEffect(() => {
    if (!enabled) return undefined;
    let stopped = false;
    // The stream's events since the oldest fetch still on its way (kept only while one is).
    let journal = [];
    let fetching = 0;
    const apply = (action) => {
      if (fetching > 0) journal.push(action);
      dispatch(action);
    };

    const refetch = async () => {
      fetching += 1;
      const from = journal.length;
      try {
        const [a, c] = await Promise.all([get('approvals'), get('calls')]);
        if (stopped) return;
        dispatch({
          type: 'lists',
          approvals: (a && a.approvals) || [],
          running: (c && c.running) || [],
          recent: (c && c.recent) || [],
          since: journal.slice(from),
        });
        setError('');
      } catch (e) {
        if (!stopped) setError(e.message);
      } finally {
        fetching -= 1;
        if (fetching === 0) journal = [];
      }
    };

    // The lists at once, and again each time the stream opens, the first time included: what
    // happened between the first fetch and the stream's start (a question put, a call started or
    // ended) is sent to no stream, so only a fetch after the open can show it.
    refetch();
    const source = new EventSource('/console/api/events', { withCredentials: false });
    source.onopen = () => {
      setStatus('live');
      refetch();
    };
    source.onerror = () => {
      const closed = source.readyState === EventSource.CLOSED;
      setStatus(closed ? 'closed' : 'reconnecting');
      // The browser gives up on a non-200 answer: if the session ended, the 401 signs the page out.
      if (closed) get('session').catch(() => {});
    };
    source.addEventListener('question', (e) => {
      const question = parse(e);
      if (!question || question.id === undefined) return;
      apply({ type: 'question', question });
      announce(question);
    });
    source.addEventListener('answered', (e) => {
      const a = parse(e);
      if (a && a.id !== undefined) apply({ type: 'answered', id: a.id, note: a });
    });
    source.addEventListener('started', (e) => {
      const call = parse(e);
      if (call && call.call_id !== undefined) apply({ type: 'started', call });
    });
    source.addEventListener('ended', (e) => {
      const record = parse(e);
      if (record && record.call_id !== undefined) apply({ type: 'ended', record });
    });
    // Another daemon of the fleet started or ended calls: fetch the lists again, once for a burst.
    let pending = null;
    source.addEventListener('calls', () => {
      if (pending !== null) return;
      pending = setTimeout(() => {
        pending = null;
        if (!stopped) refetch();
      }, 200);
    });

    return () => {
      stopped = true;
      if (pending !== null) clearTimeout(pending);
      source.close();
    };
  }, [enabled, generation]);

  return {
    ...state,
    status,
    error,
    /** Drops one question locally after this operator answered it ('approve' or 'deny'). */
    answered: (id, answer) =>
      dispatch({ type: 'answered', id, note: { id, answer: answer === 'approve' ? 'approved' : 'declined' } }),
    /** Opens a new stream after it was closed for good. */
    reconnect: () => {
      setStatus('connecting');
      setGeneration((g) => g + 1);
    },
  };
}

/** The current time in ms, updated every `ms` milliseconds. */
export function useNow(ms = 1000) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return now;
}
