// How the operator hears of a new question when looking elsewhere: the tab title's "(N) " prefix
// and, only when the operator allowed it, a browser notification (never requested automatically).

const TITLE = 'toolhost console';

export function setTitle(waiting) {
  document.title = waiting > 0 ? `(${waiting}) ${TITLE}` : TITLE;
}

export function notificationsSupported() {
  return typeof window !== 'undefined' && 'Notification' in window;
}

export function notificationPermission() {
  return notificationsSupported() ? Notification.permission : 'unsupported';
}

/** Asks for permission; only ever called from the operator's click. */
export async function enableNotifications() {
  if (!notificationsSupported()) return 'unsupported';
  try {
    return await Notification.requestPermission();
  } catch (_) {
    return Notification.permission;
  }
}

/** A notification for a new question, when allowed. Its text is plain text by the API's nature. */
export function announce(question) {
  if (notificationPermission() !== 'granted') return;
  try {
    const n = new Notification('toolhost: approval needed', {
      body: `${String(question.tool)} (${String(question.plugin ?? '')}) asks: ${String(question.reason ?? '')}`,
      tag: `toolhost-question-${String(question.id)}`,
    });
    n.onclick = () => {
      window.focus();
      window.location.hash = '#/approvals';
      n.close();
    };
  } catch (_) {
    // some browsers only allow notifications from a service worker: the title still counts
  }
}
