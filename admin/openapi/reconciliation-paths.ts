/** GET /api/reconciliation (admin/reconciliation-routes.ts), for the OpenAPI document. */
import { z } from 'zod';
import { param, pageParams } from './parameters';
import { ReconciliationAnswer } from './reconciliation-answers';
import { json, reading, ref } from './responses';
import { LIMIT_DEFAULT, LIMIT_MAX } from '../query-params';

export const reconciliationPaths = {
  '/api/reconciliation': {
    get: {
      operationId: 'getReconciliation',
      summary: "Reconciliation runs against the providers' bills, and the latest report's lines",
      description:
        'The runs of `tollgate reconcile` and of the scheduled job, newest first, page by page; and the lines (UTC day x model, with a status each) of the newest successful run’s report, or of `run`, page by page. Statuses: docs/reconciliation.md.',
      tags: ['usage'],
      parameters: [
        param('provider', z.string(), 'Only the runs of this provider (and its newest report).'),
        ...pageParams('runs'),
        param('run', z.number().int().min(1), 'The run whose report to show; default the newest that succeeded.'),
        param(
          'lines_limit',
          z.number().int().min(1).max(LIMIT_MAX).default(LIMIT_DEFAULT),
          'Report lines in one answer.',
        ),
        param('lines_offset', z.number().int().min(0).default(0), 'next_lines_offset of the previous page.'),
      ],
      responses: {
        '200': json(ReconciliationAnswer, 'A page of runs and a page of a report’s lines.'),
        '400': ref('InvalidQuery'),
        ...reading,
      },
    },
  },
};
