// The Approvals page: each waiting question with what exactly it would let run, and the answer.
import { useState } from 'preact/hooks';
import { post, seg } from './api.js';
import { useNow } from './live.js';
import * as fmt from './format.js';

function Subject({ subject }) {
  if (!subject) {
    return <span class="muted" data-testid="question-subject">none (the call as a whole)</span>;
  }
  return (
    <span data-testid="question-subject">
      <code data-testid="question-subject-pointer">{fmt.text(subject.pointer)}</code>
      {' = '}
      <code class="subject-value" data-testid="question-subject-value">
        {fmt.text(subject.value)}
      </code>
    </span>
  );
}

function Question({ question, now, onAnswered }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const expired = Date.parse(question.expires_at) <= now;

  const answer = async (value) => {
    setBusy(true);
    setError('');
    try {
      await post(`approvals/${seg(question.id)}`, { answer: value, input_sha256: question.input_sha256 });
      onAnswered(question.id, value);
    } catch (e) {
      setError(e.message);
      setBusy(false);
    }
  };

  const tool = fmt.text(question.tool);
  return (
    <article class="card question" data-testid="question" data-question-id={String(question.id)}>
      <header class="card-head">
        <strong class="tool" data-testid="question-tool">{tool}</strong>
        <span class="muted">
          {' from plugin '}
          <span data-testid="question-plugin">{fmt.text(question.plugin)}</span>
        </span>
        <span class={expired ? 'countdown expired' : 'countdown'} data-testid="countdown" title={fmt.time(question.expires_at)}>
          {fmt.left(question.expires_at, now)}
        </span>
      </header>
      <dl class="facts">
        <dt>Permission</dt>
        <dd><Subject subject={question.subject} /></dd>
        <dt>Asked because</dt>
        <dd data-testid="question-reason">{fmt.text(question.reason)}</dd>
        <dt>Caller</dt>
        <dd data-testid="question-caller">{fmt.caller(question.caller)}</dd>
        <dt>Front end</dt>
        <dd data-testid="question-origin">{fmt.text(question.origin)}</dd>
        <dt>Asked at</dt>
        <dd data-testid="question-asked-at">{fmt.time(question.asked_at)}</dd>
        <dt>Call</dt>
        <dd><code data-testid="question-call-id">{fmt.text(question.call_id)}</code></dd>
        <dt>Input SHA-256</dt>
        <dd><code class="digest" data-testid="question-input-sha256">{fmt.text(question.input_sha256)}</code></dd>
      </dl>
      <h3 class="label">Input</h3>
      <pre class="json" data-testid="question-input">{fmt.json(question.input)}</pre>
      <div class="actions">
        <button
          type="button"
          class="approve"
          data-testid="approve"
          disabled={busy}
          aria-label={`Approve this call of ${tool} once`}
          onClick={() => answer('approve')}
        >
          Approve once
        </button>
        <button
          type="button"
          class="deny"
          data-testid="deny"
          disabled={busy}
          aria-label={`Deny this call of ${tool}`}
          onClick={() => answer('deny')}
        >
          Deny
        </button>
        {error ? (
          <span class="error" role="alert" data-testid="question-error">
            {error}
          </span>
        ) : null}
      </div>
    </article>
  );
}

const ANSWER_CLASS = { approved: 'ok', declined: 'bad', unanswered: 'warn' };

/** The last questions answered (here, elsewhere, or by nobody), from the `answered` events. */
function Answers({ answers }) {
  return (
    <section aria-labelledby="answers-title">
      <h3 id="answers-title">Recently answered</h3>
      <ul class="answers">
        {answers.map((a) => (
          <li key={a.id} data-testid="answered-note" data-question-id={String(a.id)}>
            <span class={ANSWER_CLASS[a.answer] || 'warn'} data-testid="answered-answer">{fmt.text(a.answer)}</span>
            {a.tool !== undefined ? <span>{` ${fmt.text(a.tool)}`}</span> : null}
            {a.operator ? <span class="muted">{` by ${fmt.text(a.operator)}`}</span> : null}
          </li>
        ))}
      </ul>
    </section>
  );
}

export function Approvals({ live }) {
  const now = useNow(1000);
  const list = live.approvals;
  return (
    <section aria-labelledby="approvals-title">
      <h2 id="approvals-title">
        Approvals <span class="muted" data-testid="approvals-count">({list.length} waiting)</span>
      </h2>
      {list.length === 0 ? (
        <p class="empty" data-testid="approvals-empty">
          No questions are waiting. New ones appear here as the <code>ask</code> gate puts them.
        </p>
      ) : (
        list.map((q) => <Question key={q.id} question={q} now={now} onAnswered={live.answered} />)
      )}
      {live.answers.length ? <Answers answers={live.answers} /> : null}
    </section>
  );
}
