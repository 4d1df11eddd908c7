// Shared by the browser checks: headless Chromium with numbered screenshots in $STRATA_E2E_OUT,
// and polling helpers.
import { chromium } from 'playwright-core';

export const ui = process.env.STRATA_E2E_UI;
export const out = process.env.STRATA_E2E_OUT;
export const deadline = (s) => Date.now() + s * 1000;
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// openBrowser starts Chromium and returns a page and a shot(name) that saves a screenshot named
// <prefix><n>-<name>.png.
export async function openBrowser(prefix) {
  const browser = await chromium.launch({
    executablePath: process.env.STRATA_CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic',
      '--no-first-run', '--disable-component-update', '--disable-sync'],
  });
  let step = 0;
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  const shot = async (name) => page.screenshot({ path: `${out}/${prefix}${String(++step).padStart(2, '0')}-${name}.png`, fullPage: true });
  return { browser, page, shot };
}

// listWorkflows asks the UI server's HTTP API for the workflows matching a visibility query.
export async function listWorkflows(query) {
  const res = await fetch(`${ui}/api/v1/namespaces/default/workflows?query=${encodeURIComponent(query)}`);
  if (!res.ok) return [];
  return (await res.json()).executions || [];
}

// searchAttribute decodes one search attribute of a listed workflow (a JSON payload).
export function searchAttribute(execution, name) {
  const payload = execution?.searchAttributes?.indexedFields?.[name];
  return payload ? JSON.parse(Buffer.from(payload.data, 'base64').toString()) : undefined;
}
