/** The runtime budget writes of the admin API (admin/budget-routes.ts), for the OpenAPI document. */
import { DeletedBudgetAnswer, RuntimeBudgetJson, RuntimeBudgetRequest } from './budget-answers';
import { error, json, schemaOf, writing } from './responses';

const body = { required: true, content: { 'application/json': { schema: schemaOf(RuntimeBudgetRequest) } } };
const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
const invalid = error(
  'The body is not a valid budget: a field, an unknown workspace, gateway key or tag; the message says which',
  ['invalid_budget', 'invalid_json'],
);
const tooLarge = error('The body is larger than 64 KiB', ['body_too_large']);
const readOnly = error('The budget comes from gateway.config.yaml: change it there', ['budget_read_only']);
const notFound = error('No runtime budget with this id', ['budget_not_found']);

export const budgetCreatePath = {
  operationId: 'createBudget',
  summary: 'Create a budget at runtime',
  description:
    'Stored in the usage store; this instance applies it at once, the others sharing the store within budgets.runtime_refresh_ms.',
  tags: ['limits'],
  requestBody: body,
  responses: { '201': json(RuntimeBudgetJson, 'The new budget.'), '400': invalid, '413': tooLarge, ...writing },
};

export const budgetWritePaths = {
  '/api/budgets/{id}': {
    patch: {
      operationId: 'changeBudget',
      summary: 'Change a runtime budget',
      description: 'The fields given replace the budget’s; its spend this period keeps counting.',
      tags: ['limits'],
      parameters: [idParam],
      requestBody: body,
      responses: {
        '200': json(RuntimeBudgetJson, 'The budget as changed.'),
        '400': invalid,
        '404': notFound,
        '409': readOnly,
        '413': tooLarge,
        ...writing,
      },
    },
    delete: {
      operationId: 'deleteBudget',
      summary: 'Delete a runtime budget',
      tags: ['limits'],
      parameters: [idParam],
      responses: { '200': json(DeletedBudgetAnswer, 'Deleted.'), '404': notFound, '409': readOnly, ...writing },
    },
  },
};
