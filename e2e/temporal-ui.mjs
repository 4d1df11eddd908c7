// Browser check of the Temporal Web UI (run by scripts/e2e.sh): finds the store's maintenance
// workflow in the workflow list, opens it, finds the running MergeWAL activity and its heartbeat
// details on the Pending Activities tab, and finds the strata-sweep schedule on the Schedules
// page. Screenshots go to $STRATA_E2E_OUT.
import { deadline, openBrowser, sleep, ui } from './browser.mjs';

const store = process.env.STRATA_E2E_STORE;
const workflowId = `store/rollout/${store}`;

// 1. Wait (through the UI server's HTTP API) for the scheduled sweep to start the merge.
async function pendingMerge() {
  const res = await fetch(`${ui}/api/v1/namespaces/default/workflows/${encodeURIComponent(workflowId)}`);
  if (!res.ok) return null;
  const body = await res.json();
  const merge = (body.pendingActivities || []).find((a) => a.activityType?.name === 'MergeWAL');
  return merge && merge.heartbeatDetails ? { merge, runId: body.workflowExecutionInfo.execution.runId } : null;
}
let found = null;
for (const end = deadline(120); !found && Date.now() < end; await sleep(500)) {
  found = await pendingMerge().catch(() => null);
}
if (!found) throw new Error(`no running MergeWAL activity with heartbeat details on ${workflowId} within 120 s`);
console.log(`temporal-ui: ${workflowId} is merging (run ${found.runId})`);

const { browser, page, shot } = await openBrowser('');
try {
  // 2. The workflow list shows the store's maintenance workflow; open it.
  await page.goto(`${ui}/namespaces/default/workflows`);
  const link = page.getByRole('link', { name: workflowId }).first();
  for (const end = deadline(90); ; ) {
    if (await link.waitFor({ timeout: 15000 }).then(() => true, () => false)) break;
    if (Date.now() > end) { await shot('workflow-list-missing'); throw new Error(`${workflowId} is not in the workflow list`); }
    await page.reload();
  }
  await shot('workflow-list');
  await link.click();
  await page.waitForURL(/\/workflows\/store%2Frollout%2F|\/workflows\/store\/rollout\//);
  await page.getByText(workflowId).first().waitFor();
  await shot('workflow');

  // 3. The pending MergeWAL activity and its heartbeat details.
  await page.getByText('Pending Activities').first().click();
  await page.getByText('MergeWAL').first().waitFor({ timeout: 30000 });
  await page.getByText('Heartbeat Details', { exact: true }).first().waitFor({ timeout: 30000 });
  for (const key of ['phase', 'reserved_bytes', 'generations_read']) {
    await page.getByText(key).first().waitFor({ timeout: 30000 });
  }
  await shot('pending-merge-activity');
  console.log('temporal-ui: found the MergeWAL activity with its heartbeat details');

  // 4. The Schedules page lists the sweep.
  await page.goto(`${ui}/namespaces/default/schedules`);
  await page.getByText('strata-sweep').first().waitFor({ timeout: 30000 });
  await shot('schedules');
  console.log('temporal-ui: the Schedules page lists strata-sweep');
} catch (err) {
  await shot('failure').catch(() => {});
  throw err;
} finally {
  await browser.close();
}
