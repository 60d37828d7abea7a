-- cleveragents.nvim: run cleveragents from Neovim and watch its tool calls in a scratch buffer.
--
-- The daemon (`cleveragents serve --stdio`) speaks JSON-RPC over the LSP base protocol, so
-- `vim.lsp.rpc` is the transport. It is not a language server, so no `vim.lsp.start`: that
-- would attach buffers and send document events the daemon has no use for.
-- Protocol: protocol/README.md in the cleveragents repository.

local M = {}

local uv = vim.uv or vim.loop

---@class cleveragents.Config
local defaults = {
  -- How to start the daemon.
  cmd = { 'cleveragents', 'serve', '--stdio' },
  -- Environment variables added for the daemon (API keys, CLEVERAGENTS_*).
  cmd_env = nil,
  -- Working directory of the daemon; default: Neovim's.
  cmd_cwd = nil,
  -- initializationOptions: defaults for every run (provider, model, automationProfile, ...).
  init_options = {},
  -- Extra cleveragents/run params for every run (maxIterations, tools, ...).
  run_params = {},
  -- The sandbox root: a path, or a function returning one. Default: the current directory.
  sandbox_root = nil,
  -- Approvals: nil asks with vim.ui.select; 'allow', 'deny' or 'allow_for_run' answers
  -- every question that way without asking.
  approval = nil,
  -- Workspace trust: a sandbox's `.mcp.json` starts programs, so the daemon asks before the
  -- first run of each version of that file. nil asks with vim.ui.select (the commands are
  -- shown first); true trusts and false declines every such question without asking.
  trust = nil,
  -- Where the scratch buffer opens: 'split', 'vsplit', 'tab', 'current' or false (not shown).
  open = 'split',
  -- Serve the daemon's runs `get_diagnostics` (what vim.diagnostic holds for a file, or for
  -- every buffer): the model sees the problems your language servers and linters report.
  client_tools = true,
}

local config = vim.deepcopy(defaults)

---@type table|nil the running daemon: rpc, ready, failed, queued, on_exit
local daemon = nil
---@type table<string, table> runs by id
local runs = {}
local latest_run = nil
local run_counter = 0
---@type table<integer, table<integer, string>> runs-list buffers: line -> runId
local listed_runs = {}

local DECISIONS = { allow = true, deny = true, allow_for_run = true }
local describe_undo -- defined with the views

-- -- small helpers ---------------------------------------------------------------------------

local function is_null(value)
  return value == nil or value == vim.NIL
end

local function one_line(text, limit)
  text = tostring(text):gsub('%s*\n%s*', ' ')
  if vim.fn.strchars(text) > limit then
    text = vim.fn.strcharpart(text, 0, limit - 1) .. '…'
  end
  return text
end

-- Arguments as `key=value`, keys sorted, so a line reads the same every time. The daemon
-- adds the run's `sandbox_root` to every call (the header shows it): left out here.
local function format_inputs(inputs)
  if type(inputs) ~= 'table' or vim.islist(inputs) then
    return one_line(vim.json.encode(inputs), 80)
  end
  local keys = vim.tbl_keys(inputs)
  table.sort(keys)
  local parts = {}
  for _, key in ipairs(keys) do
    if key ~= 'sandbox_root' then
      parts[#parts + 1] = key .. '=' .. vim.json.encode(inputs[key])
    end
  end
  return one_line(table.concat(parts, ' '), 80)
end

local function text_lines(text)
  if text == '' then
    return {}
  end
  return vim.split(text, '\n', { plain = true })
end

local function error_message(err)
  if type(err) == 'table' then
    return (err.message or vim.inspect(err)) .. (err.code and (' (' .. err.code .. ')') or '')
  end
  return tostring(err)
end

-- -- the scratch buffer: a list of entries, each a block of lines --------------------------

local function render(run, index, lines)
  local buf = run.buf
  if not vim.api.nvim_buf_is_valid(buf) then
    run.entries[index] = lines
    return
  end
  local start = 0
  for i = 1, index - 1 do
    start = start + #run.entries[i]
  end
  local old = run.entries[index] and #run.entries[index] or 0
  local before = vim.api.nvim_buf_line_count(buf)
  local following = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    following[win] = vim.api.nvim_win_get_cursor(win)[1] >= before
  end
  run.entries[index] = lines
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, start, start + old, false, lines)
  vim.bo[buf].modifiable = false
  local count = vim.api.nvim_buf_line_count(buf)
  for win, follow in pairs(following) do
    if follow and vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_set_cursor(win, { count, 0 })
    end
  end
end

local function append(run, lines)
  local index = #run.entries + 1
  render(run, index, lines)
  return index
end

local function call_line(call)
  local line = call.mark .. ' ' .. call.tool .. (call.args ~= '' and (' ' .. call.args) or '')
  for _, note in ipairs(call.notes) do
    line = line .. ' · ' .. note
  end
  return line
end

local function show_call(run, call)
  render(run, call.entry, { call_line(call) })
end

local function find_call(run, call_id, tool, inputs)
  local call = run.calls[call_id]
  if not call then
    call = { tool = tool, args = format_inputs(inputs), mark = '⋯', notes = {} }
    run.calls[call_id] = call
    call.entry = append(run, { call_line(call) })
  end
  return call
end

local function finish(run, lines)
  if lines then
    append(run, lines)
  end
  run.done = true
end

local function open_buffer(buf)
  local how = config.open
  if not how then
    return
  end
  if how == 'tab' then
    vim.cmd('tab split')
  elseif how == 'vsplit' then
    vim.cmd('vsplit')
  elseif how == 'split' then
    vim.cmd('split')
  end
  vim.api.nvim_win_set_buf(0, buf)
end

-- A scratch buffer named `cleveragents://<name>`; the one already so named is reused.
local function scratch_buffer(name)
  local full = 'cleveragents://' .. name
  local existing = vim.fn.bufnr(full)
  if existing ~= -1 and vim.api.nvim_buf_is_valid(existing) then
    return existing
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'cleveragents'
  pcall(vim.api.nvim_buf_set_name, buf, full)
  return buf
end

local function new_run(prompt, sandbox_root)
  run_counter = run_counter + 1
  local id = string.format('nvim-%d-%d-%d', os.time(), vim.fn.getpid(), run_counter)
  local buf = scratch_buffer(id)
  vim.b[buf].cleveragents_run_id = id
  local run = {
    id = id,
    buf = buf,
    prompt = prompt,
    sandbox_root = sandbox_root,
    entries = {},
    texts = {}, -- iteration -> { entry = index, text = string }
    calls = {}, -- callId -> { entry, tool, args, mark, notes }
    done = false,
    result = nil,
    error = nil,
  }
  -- A fresh buffer has one empty line; the header replaces it.
  run.entries[1] = { '' }
  render(run, 1, { 'cleveragents ▸ ' .. one_line(prompt, 200), 'sandbox ' .. sandbox_root })
  runs[id] = run
  latest_run = run
  open_buffer(buf)
  return run
end

-- -- what the daemon sends ---------------------------------------------------------------

local on_notification = {}

on_notification['cleveragents/runStarted'] = function(run, p)
  render(run, 1, {
    'cleveragents ▸ ' .. one_line(p.prompt, 200),
    string.format(
      'sandbox %s · profile %s · provider %s · run %s',
      p.sandboxRoot,
      p.automationProfile,
      p.provider,
      p.runId
    ),
  })
end

on_notification['cleveragents/iterationStarted'] = function(run, p)
  run.texts[p.iteration] = { entry = append(run, {}), text = '' }
end

on_notification['cleveragents/textDelta'] = function(run, p)
  local block = run.texts[p.iteration]
  if not block then
    block = { entry = append(run, {}), text = '' }
    run.texts[p.iteration] = block
  end
  block.text = block.text .. p.text
  render(run, block.entry, text_lines(block.text))
end

on_notification['cleveragents/toolCallStarted'] = function(run, p)
  find_call(run, p.callId, p.toolName, p.inputs)
end

-- A call line's mark and notes once its record is known.
local function settle_call(call, record)
  call.mark = record.success and '✓' or '✗'
  call.notes = { string.format('%.1f ms', record.durationMs) }
  if not record.success then
    local kind = is_null(record.errorKind) and 'error' or record.errorKind
    local why = is_null(record.error) and '' or (': ' .. one_line(record.error, 120))
    call.notes[2] = kind .. why
  end
end

-- The closing block: `── reason · N iterations · M tool calls ──`, then the answer or error.
local function final_lines(reason, iterations, tool_calls, content, err)
  local head = string.format(
    '── %s · %d iteration%s · %d tool call%s ──',
    reason,
    iterations,
    iterations == 1 and '' or 's',
    tool_calls,
    tool_calls == 1 and '' or 's'
  )
  local lines = { head }
  if not is_null(err) and (reason == 'error' or is_null(content)) then
    lines[2] = '✗ ' .. one_line(err, 200)
  elseif not is_null(content) then
    vim.list_extend(lines, text_lines(content))
  end
  return lines
end

on_notification['cleveragents/toolCall'] = function(run, p)
  local record = p.record
  local call = find_call(run, record.callId, record.toolName, record.inputs)
  settle_call(call, record)
  show_call(run, call)
end

on_notification['cleveragents/runFinished'] = function(run, p)
  local err = p.stopReason == 'error' and p.error or nil
  append(run, final_lines(p.stopReason, p.iterations, p.toolCalls, p.content, err))
  run.finished = true
end

local function dispatch_notification(method, params)
  local handler = on_notification[method]
  local run = handler and type(params) == 'table' and runs[params.runId]
  if run then
    handler(run, params)
  end
end

local function ask(params)
  local co, is_main = coroutine.running()
  if not co or is_main then
    return 'deny' -- nowhere to wait for an answer
  end
  local labels = {
    allow = 'Allow',
    allow_for_run = 'Allow ' .. params.toolName .. ' for the rest of this run',
    deny = 'Deny',
  }
  local items = { 'allow', 'allow_for_run', 'deny' }
  local prompt = string.format('cleveragents: run %s %s?', params.toolName, format_inputs(params.inputs))
  if params.protected then
    -- A protected write is asked about every time: "for this run" would mean only this once.
    labels.allow = 'Allow this once'
    items = { 'allow', 'deny' }
    prompt = string.format(
      'cleveragents: %s %s writes a protected path: it can run programs later, outside the sandbox, so it is asked every time.%s Allow?',
      params.toolName,
      format_inputs(params.inputs),
      type(params.note) == 'string' and (' ' .. params.note) or ''
    )
  end
  vim.ui.select(items, {
    prompt = prompt,
    kind = 'cleveragents_approval',
    format_item = function(choice)
      return labels[choice]
    end,
  }, function(choice)
    -- Resume later: with a synchronous vim.ui.select this callback runs before the yield.
    vim.schedule(function()
      coroutine.resume(co, choice or 'deny')
    end)
  end)
  return coroutine.yield()
end

-- Control characters and invisible format characters (as UTF-8): C1 controls, zero-width
-- ones, line separators, bidi embeddings, overrides and isolates, the BOM.
local HIDDEN = {
  '[%z\1-\31\127]',
  '\194[\128-\159]',
  '\226\128[\139-\143\168-\174]',
  '\226\129[\160-\169]',
  '\239\187\191',
}

--- A word as a shell would need it; with hidden characters, `$'…'` with them escaped, so an
--- escape sequence or a right-to-left override cannot change what the question shows.
local function shell_word(word)
  word = tostring(word)
  local hidden = false
  for _, pattern in ipairs(HIDDEN) do
    hidden = hidden or word:find(pattern) ~= nil
  end
  if not hidden then
    return word:match('^[%w_@%%+=:,./-]+$') and word or vim.fn.shellescape(word)
  end
  local escaped = word:gsub('[\\\']', '\\%0')
  for _, pattern in ipairs(HIDDEN) do
    escaped = escaped:gsub(pattern, function(bytes)
      if #bytes == 1 then
        return string.format('\\x%02x', bytes:byte())
      end
      return string.format('\\u%04x', vim.fn.char2nr(bytes))
    end)
  end
  return "$'" .. escaped .. "'"
end

local FLAG_PROGRAM = '  [!] a program inside the workspace'
local FLAG_VARIABLE = '  [!] changes which program runs or what it loads'

--- One variable a server sets: secret-looking values masked (length shown), those that
--- change what runs flagged, with their expanded value when it differs.
local function variable_line(variable)
  local name = shell_word(variable.name)
  if variable.masked == true or type(variable.value) ~= 'string' then
    return string.format('%s=<hidden: %s characters>', name, tostring(variable.length))
  end
  local line = name .. '=' .. shell_word(variable.value)
  if type(variable.expanded) == 'string' then
    line = line .. ' (= ' .. shell_word(variable.expanded) .. ')'
  end
  if variable.changesWhatRuns == true then
    line = line .. FLAG_VARIABLE
  end
  return line
end

--- The lines that show what a `.mcp.json` would start, as the daemon's other fronts show it:
--- each server's command as written, the absolute program that will run (flagged when the
--- workspace holds it) and every variable it sets with its value. A daemon that sends only
--- `envNames` (older) gets those names listed.
local function trust_lines(params)
  local lines = { string.format('%s asks to start these MCP servers:', tostring(params.configPath)) }
  for _, server in ipairs(type(params.servers) == 'table' and params.servers or {}) do
    local words = { shell_word(server.command) }
    for _, arg in ipairs(type(server.args) == 'table' and server.args or {}) do
      words[#words + 1] = shell_word(arg)
    end
    local line = string.format('  %s: %s', shell_word(server.name), table.concat(words, ' '))
    if type(server.env) ~= 'table' then
      if type(server.envNames) == 'table' and #server.envNames > 0 then
        line = line .. ' (sets ' .. table.concat(server.envNames, ', ') .. ')'
      end
      lines[#lines + 1] = line
    else
      lines[#lines + 1] = line
      if type(server.program) == 'string' then
        local flag = server.programInWorkspace == true and FLAG_PROGRAM or ''
        lines[#lines + 1] = '      runs ' .. shell_word(server.program) .. flag
      else
        lines[#lines + 1] = '      runs nothing: the command was not found on its PATH'
      end
      for _, variable in ipairs(server.env) do
        if type(variable) == 'table' then
          lines[#lines + 1] = '      sets ' .. variable_line(variable)
        end
      end
    end
  end
  return lines
end

local function ask_trust(params, lines)
  local co, is_main = coroutine.running()
  if not co or is_main then
    return false -- nowhere to wait for an answer
  end
  local labels = {
    trust = 'Trust and start them (remembered until the file changes)',
    decline = 'Do not start them (remembered until the file changes)',
  }
  vim.ui.select({ 'trust', 'decline' }, {
    prompt = 'cleveragents: ' .. table.concat(lines, '\n') .. '\nTrust this workspace?',
    kind = 'cleveragents_trust',
    format_item = function(choice)
      return labels[choice]
    end,
  }, function(choice)
    vim.schedule(function()
      coroutine.resume(co, choice == 'trust')
    end)
  end)
  return coroutine.yield()
end

local function answer_trust(params)
  if type(params) ~= 'table' then
    return { trusted = false }
  end
  local lines = trust_lines(params)
  -- Shown in every unfinished run of that folder, so the answer is on record there.
  local shown = {}
  for _, run in pairs(runs) do
    if not run.done and vim.fn.resolve(run.sandbox_root) == vim.fn.resolve(tostring(params.sandboxRoot)) then
      shown[#shown + 1] = run
      append(run, lines)
    end
  end
  local trusted
  if config.trust == nil then
    trusted = ask_trust(params, lines)
  else
    trusted = config.trust == true
  end
  local verdict = trusted and 'trusted: the servers start'
    or 'not trusted: the run goes on without these servers'
  for _, run in ipairs(shown) do
    append(run, { verdict })
  end
  return { trusted = trusted }
end

-- -- tools this client serves (cleveragents/callClientTool) ---------------------------------

local CLIENT_TOOLS = {
  {
    name = 'get_diagnostics',
    description = "The editor's problems (type errors, lint, syntax errors) for one file, or for "
      .. 'every file open in the editor when `path` is left out: severity, 1-based line and '
      .. 'column, source, code and message.',
    inputSchema = {
      type = 'object',
      properties = {
        path = { type = 'string', description = "A file's path, relative to the run's folder or absolute." },
      },
      additionalProperties = false,
    },
    readOnly = true,
    timeoutSeconds = 30,
  },
}

local SEVERITY_NAMES = { 'error', 'warning', 'information', 'hint' }

local function tool_text(text, is_error)
  return { content = { { type = 'text', text = text } }, isError = is_error or nil }
end

local function relative_to(root, file)
  local prefix = vim.fn.resolve(root):gsub('/+$', '') .. '/'
  local resolved = vim.fn.resolve(file)
  if resolved:sub(1, #prefix) == prefix then
    return resolved:sub(#prefix + 1)
  end
  return resolved
end

-- Waiting for the editor to react to the run's last edit: a first DiagnosticChanged (for
-- `bufnr`, or any buffer when nil), then QUIET_MS without another (language servers report in
-- steps), or FIRST_MS without any (nothing changed), MAX_MS in all. Call before what makes
-- the change (a load, a reload); the returned function waits in the request's coroutine.
local SETTLE = { first_ms = 3000, quiet_ms = 400, max_ms = 10000 }

local function watch_diagnostics(bufnr)
  local co, is_main = coroutine.running()
  if not co or is_main then
    return function() end -- nowhere to wait: answer with what is known now
  end
  local settled, waiting, changes = false, false, 0
  local group = vim.api.nvim_create_augroup('cleveragents_settle_' .. tostring(uv.hrtime()), { clear = true })
  local function finish()
    if settled then
      return
    end
    settled = true
    pcall(vim.api.nvim_del_augroup_by_id, group)
    if waiting then
      vim.schedule(function()
        coroutine.resume(co)
      end)
    end
  end
  vim.api.nvim_create_autocmd('DiagnosticChanged', {
    group = group,
    callback = function(args)
      if bufnr ~= nil and args.buf ~= bufnr then
        return
      end
      changes = changes + 1
      local mine = changes
      vim.defer_fn(function()
        if changes == mine then
          finish()
        end
      end, SETTLE.quiet_ms)
    end,
  })
  vim.defer_fn(function()
    if changes == 0 then
      finish()
    end
  end, SETTLE.first_ms)
  vim.defer_fn(finish, SETTLE.max_ms)
  return function()
    if not settled then
      waiting = true
      coroutine.yield()
    end
  end
end

-- What vim.diagnostic holds once the file's sources have looked at it again: a file Neovim
-- has not loaded is loaded (its language servers attach), a loaded one re-read if the run
-- changed it on disk.
local function get_diagnostics(params)
  local run = runs[params.runId]
  local root = run and run.sandbox_root or vim.fn.getcwd()
  local given = params.arguments and params.arguments.path
  if given ~= nil and type(given) ~= 'string' then
    return tool_text('`path` must be a string', true)
  end
  local found
  local scope = 'workspace'
  if given ~= nil then
    local file = vim.fn.fnamemodify(given:sub(1, 1) == '/' and given or (root .. '/' .. given), ':p')
    if vim.fn.filereadable(file) == 0 then
      return tool_text(given .. ': no such file', true)
    end
    local bufnr = vim.fn.bufadd(file)
    local wait = watch_diagnostics(bufnr)
    if vim.api.nvim_buf_is_loaded(bufnr) then
      pcall(vim.cmd, 'checktime ' .. bufnr)
    else
      vim.fn.bufload(bufnr)
      vim.bo[bufnr].buflisted = true
    end
    wait()
    found = vim.diagnostic.get(bufnr)
    scope = given
  else
    watch_diagnostics(nil)()
    found = vim.diagnostic.get(nil)
  end
  local problems, errors, warnings = {}, 0, 0
  for _, d in ipairs(found) do
    local severity = SEVERITY_NAMES[d.severity] or 'error'
    if severity == 'error' then
      errors = errors + 1
    elseif severity == 'warning' then
      warnings = warnings + 1
    end
    problems[#problems + 1] = {
      path = relative_to(root, vim.api.nvim_buf_get_name(d.bufnr)),
      severity = severity,
      line = d.lnum + 1,
      column = d.col + 1,
      endLine = (d.end_lnum or d.lnum) + 1,
      endColumn = (d.end_col or d.col) + 1,
      source = d.source or vim.NIL,
      code = d.code ~= nil and tostring(d.code) or vim.NIL,
      message = d.message,
    }
  end
  table.sort(problems, function(a, b)
    if a.path ~= b.path then
      return a.path < b.path
    end
    if a.line ~= b.line then
      return a.line < b.line
    end
    return a.column < b.column
  end)
  return tool_text(vim.json.encode({
    scope = scope,
    errors = errors,
    warnings = warnings,
    problems = problems,
  }))
end

local function answer_client_tool(params)
  if type(params) ~= 'table' then
    return tool_text('no params', true)
  end
  if params.name == 'get_diagnostics' then
    return get_diagnostics(params)
  end
  return tool_text('cleveragents.nvim serves no tool named ' .. tostring(params.name), true)
end

local function dispatch_request(method, params)
  if method == 'cleveragents/trustWorkspace' then
    return answer_trust(params)
  end
  if method == 'cleveragents/callClientTool' then
    return answer_client_tool(params)
  end
  if method ~= 'cleveragents/approveToolCall' then
    return nil,
      vim.lsp.rpc.rpc_response_error(
        vim.lsp.protocol.ErrorCodes.MethodNotFound,
        'cleveragents.nvim does not serve ' .. method
      )
  end
  local run = runs[params.runId]
  local call = run and find_call(run, params.callId, params.toolName, params.inputs)
  if call then
    call.notes = { 'awaiting approval' }
    show_call(run, call)
  end
  local decision = config.approval or ask(params)
  if not DECISIONS[decision] then
    decision = 'deny'
  end
  if decision == 'allow_for_run' and params.protected then
    decision = 'allow' -- what the daemon makes of it: a protected write is allowed once only
  end
  if call then
    call.notes = { decision == 'deny' and 'denied by you' or 'approved' }
    show_call(run, call)
  end
  return { decision = decision }
end

-- -- the daemon ------------------------------------------------------------------------------

local function fail_unfinished(d, message)
  for _, run in pairs(runs) do
    if run.daemon == d and not run.done then
      run.error = message
      finish(run, { '✗ ' .. message })
    end
  end
end

local function on_daemon_exit(d, code, signal)
  if daemon == d then
    daemon = nil
  end
  local message = string.format('the daemon exited (code %d, signal %d)', code, signal)
  for _, waiting in ipairs(d.queued) do
    waiting(nil, message)
  end
  d.queued = {}
  fail_unfinished(d, message)
  for _, callback in ipairs(d.on_exit) do
    callback(code, signal)
  end
end

local function start_daemon()
  local d = { ready = false, queued = {}, on_exit = {} }
  local ok, rpc = pcall(vim.lsp.rpc.start, config.cmd, {
    notification = dispatch_notification,
    server_request = dispatch_request,
    -- Called from a libuv callback: get back to the main loop first.
    on_exit = function(code, signal)
      vim.schedule(function()
        on_daemon_exit(d, code, signal)
      end)
    end,
  }, { cwd = config.cmd_cwd, env = config.cmd_env })
  if not ok then
    return nil, 'cannot start ' .. table.concat(config.cmd, ' ') .. ': ' .. tostring(rpc)
  end
  d.rpc = rpc
  rpc.request('initialize', {
    processId = vim.fn.getpid(),
    clientInfo = { name = 'cleveragents.nvim' },
    capabilities = {
      experimental = {
        cleveragents = {
          approvals = true,
          trust = true,
          tools = config.client_tools and CLIENT_TOOLS or nil,
        },
      },
    },
    initializationOptions = next(config.init_options) and config.init_options or nil,
  }, function(err)
    local queued = d.queued
    d.queued = {}
    if err then
      d.failed = 'initialize failed: ' .. error_message(err)
      for _, waiting in ipairs(queued) do
        waiting(nil, d.failed)
      end
      rpc.terminate()
      return
    end
    rpc.notify('initialized', vim.empty_dict())
    d.ready = true
    for _, waiting in ipairs(queued) do
      waiting(d)
    end
  end)
  return d
end

-- Calls `callback(d)` once the daemon is initialized, or `callback(nil, why)`.
local function with_daemon(callback)
  if daemon and daemon.failed then
    daemon = nil
  end
  if not daemon then
    local d, why = start_daemon()
    if not d then
      return callback(nil, why)
    end
    daemon = d
  end
  if daemon.ready then
    return callback(daemon)
  end
  table.insert(daemon.queued, callback)
end

local function resolve_sandbox_root()
  local root = config.sandbox_root
  if type(root) == 'function' then
    root = root()
  end
  local path = vim.fn.fnamemodify(root or uv.cwd(), ':p'):gsub('(.)/$', '%1')
  return path
end

-- -- views: the tool list, the history, one stored run --------------------------------------

-- A view is a scratch buffer filled from one request: `buf`, `done`, then `result` or `error`.
local function new_view(name, title)
  local buf = scratch_buffer(name)
  local view = { buf = buf, done = false, result = nil, error = nil }
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { title })
  vim.bo[buf].modifiable = false
  open_buffer(buf)
  return view
end

local function fill_view(view, lines)
  vim.bo[view.buf].modifiable = true
  vim.api.nvim_buf_set_lines(view.buf, 0, -1, false, lines)
  vim.bo[view.buf].modifiable = false
end

-- Sends `method`; `describe(result)` turns the answer into the view's lines.
local function request_view(view, method, params, describe)
  with_daemon(function(d, why)
    if not d then
      view.error = why
      view.done = true
      return fill_view(view, { '✗ ' .. why })
    end
    d.rpc.request(method, params, function(err, result)
      if err then
        view.error = error_message(err)
        fill_view(view, { '✗ ' .. view.error })
      else
        view.result = result
        fill_view(view, describe(result))
      end
      view.done = true
    end)
  end)
  return view
end

local function plural(count, word)
  return string.format('%d %s%s', count, word, count == 1 and '' or 's')
end

-- What a tool does to the workspace, as the profiles see it.
local function tool_effect(tool)
  if tool.executesCode then
    return 'runs programs'
  end
  return tool.mutating and 'writes' or 'reads'
end

-- `name(a, b, c?)`: the arguments, optional ones marked with `?`.
local function tool_signature(tool)
  local schema = type(tool.inputSchema) == 'table' and tool.inputSchema or {}
  local properties = type(schema.properties) == 'table' and schema.properties or {}
  local required = {}
  for _, name in ipairs(type(schema.required) == 'table' and schema.required or {}) do
    required[name] = true
  end
  local names = vim.tbl_keys(properties)
  table.sort(names, function(a, b)
    if required[a] ~= required[b] then
      return required[a] == true
    end
    return a < b
  end)
  local args = vim.tbl_map(function(name)
    return required[name] and name or (name .. '?')
  end, names)
  return tool.name .. '(' .. table.concat(args, ', ') .. ')'
end

local function describe_tools(result)
  local tools = result.tools or {}
  local lines = { 'cleveragents tools · ' .. #tools .. ' offered' }
  for _, tool in ipairs(tools) do
    lines[#lines + 1] =
      string.format('%s · %s · %s', tool_signature(tool), tool_effect(tool), tool.source)
    local first = text_lines(tool.description or '')[1]
    if first and first ~= '' then
      lines[#lines + 1] = '    ' .. one_line(first, 100)
    end
  end
  return lines
end

local function when(seconds)
  return os.date('%Y-%m-%d %H:%M', math.floor(seconds))
end

local function describe_runs(buf, result)
  local listed = result.runs or {}
  local lines = { 'cleveragents runs · ' .. #listed .. ' newest first · <CR> shows one' }
  local ids = {}
  for _, summary in ipairs(listed) do
    lines[#lines + 1] = string.format(
      '%s · %s · %s · %s · %s',
      when(summary.startedAt),
      summary.status,
      plural(summary.iterations, 'iteration'),
      plural(summary.toolCallCount, 'tool call'),
      one_line(summary.prompt, 80)
    )
    ids[#lines] = summary.runId
  end
  listed_runs[buf] = ids
  return lines
end

-- -- undo ----------------------------------------------------------------------------------

local CHANGE_MARKS = { added = '+', modified = '~', deleted = '-' }

local function change_lines(changed)
  return vim.tbl_map(function(file)
    return string.format('  %s %s (%s)', CHANGE_MARKS[file.change] or '?', file.path, file.change)
  end, changed or {})
end

-- What a stored run changed and how to undo it; nothing for a run that changed no file.
describe_undo = function(detail)
  local lines = {}
  local changed = detail.changedFiles or {}
  if not is_null(detail.checkpointWarning) then
    lines[#lines + 1] = '! ' .. one_line(detail.checkpointWarning, 200)
  end
  if #changed > 0 then
    lines[#lines + 1] = 'changed ' .. plural(#changed, 'file') .. ':'
    vim.list_extend(lines, change_lines(changed))
    local steps = vim.tbl_filter(function(checkpoint)
      return not is_null(checkpoint.iteration)
    end, detail.checkpoints or {})
    lines[#lines + 1] = 'undo: :CleverAgentsRestore ' .. detail.runId .. (#steps > 1 and ' [iteration]' or '')
  end
  return lines
end

local function restore_title(run_id, iteration)
  if iteration then
    return string.format('cleveragents restore ▸ run %s to before iteration %d', run_id, iteration)
  end
  return 'cleveragents restore ▸ undo ' .. run_id
end

-- A stored run, laid out as its live buffer was: the model's text and one line per call for
-- each iteration, then the closing block.
local function describe_stored_run(detail)
  local lines = {
    'cleveragents ▸ ' .. one_line(detail.prompt, 200),
    string.format(
      'sandbox %s · profile %s · run %s · %s',
      is_null(detail.sandboxRoot) and '-' or detail.sandboxRoot,
      detail.automationProfile,
      detail.runId,
      when(detail.startedAt)
    ),
  }
  local records = {}
  for _, record in ipairs(detail.toolCallHistory or {}) do
    records[record.callId] = record
  end
  for _, message in ipairs(detail.messages or {}) do
    if message.role == 'assistant' then
      vim.list_extend(lines, text_lines(is_null(message.text) and '' or message.text))
      for _, requested in ipairs(is_null(message.toolCalls) and {} or message.toolCalls) do
        local call = {
          tool = requested.toolName,
          args = format_inputs(requested.arguments),
          mark = '⋯',
          notes = {},
        }
        local record = records[requested.callId]
        if record then
          settle_call(call, record)
        end
        lines[#lines + 1] = call_line(call)
      end
    end
  end
  local reason = is_null(detail.stopReason) and detail.status or detail.stopReason
  vim.list_extend(
    lines,
    final_lines(reason, detail.iterations, detail.toolCallCount, detail.content, detail.error)
  )
  return vim.list_extend(lines, describe_undo(detail))
end

-- -- the API ---------------------------------------------------------------------------------

---@param opts? cleveragents.Config
function M.setup(opts)
  config = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  if opts and opts.cmd then
    config.cmd = opts.cmd -- lists are replaced, not merged
  end
  local command = vim.api.nvim_create_user_command
  command('CleverAgentsRun', function(args)
    M.run(args.args)
  end, { nargs = '+', desc = 'cleveragents: run a prompt in the current directory' })
  command('CleverAgentsCancel', function()
    M.cancel()
  end, { desc = "cleveragents: stop this buffer's run, else the latest" })
  command('CleverAgentsStop', function()
    M.stop()
  end, { desc = 'cleveragents: stop the daemon' })
  command('CleverAgentsTools', function(args)
    M.tools({ mcp = args.bang })
  end, { bang = true, desc = "cleveragents: list the tools (!: with this folder's MCP tools)" })
  command('CleverAgentsRuns', function(args)
    M.runs({ limit = tonumber(args.args) })
  end, { nargs = '?', desc = 'cleveragents: list past and running runs' })
  command('CleverAgentsShowRun', function(args)
    M.show_run(args.args)
  end, { nargs = '?', desc = 'cleveragents: show a run from the history' })
  command('CleverAgentsRestore', function(args)
    local run_id, iteration = unpack(args.fargs)
    M.restore(run_id, { iteration = tonumber(iteration), confirm = not args.bang })
  end, {
    nargs = '*',
    bang = true,
    desc = 'cleveragents: put the files back as before a run (or before its iteration N); !: without asking',
  })
  vim.api.nvim_create_autocmd('VimLeavePre', {
    group = vim.api.nvim_create_augroup('cleveragents', { clear = true }),
    callback = function()
      M.stop({ wait_ms = 3000 })
    end,
  })
end

--- Start a run. Returns the run: `buf` its scratch buffer, `done` once it has ended,
--- `result` (a RunResult) or `error`.
---@param prompt string
---@param opts? { sandbox_root?: string, params?: table }
function M.run(prompt, opts)
  opts = opts or {}
  local run = new_run(prompt, opts.sandbox_root or resolve_sandbox_root())
  local params = vim.tbl_extend('force', config.run_params, opts.params or {}, {
    prompt = prompt,
    sandboxRoot = run.sandbox_root,
    runId = run.id,
  })
  with_daemon(function(d, why)
    if not d then
      run.error = why
      return finish(run, { '✗ ' .. why })
    end
    run.daemon = d
    d.rpc.request('cleveragents/run', params, function(err, result)
      if err then
        run.error = error_message(err)
        -- After a runFinished the buffer already says why; otherwise say it here.
        return finish(run, (not run.finished) and { '✗ ' .. run.error } or nil)
      end
      run.result = result
      finish(run)
    end)
  end)
  return run
end

--- The run of the current buffer, else the latest run.
function M.current_run()
  local id = vim.b.cleveragents_run_id
  return (id and runs[id]) or latest_run
end

--- Stop a run (default: `current_run()`).
function M.cancel(run)
  run = run or M.current_run()
  if not run or run.done or not run.daemon then
    vim.notify('cleveragents: no run to cancel', vim.log.levels.WARN)
    return
  end
  run.daemon.rpc.request('cleveragents/cancel', { runId = run.id }, function(err)
    if err then
      vim.notify('cleveragents: cancel failed: ' .. error_message(err), vim.log.levels.ERROR)
    end
  end)
end

--- List the tools runs are offered in a scratch buffer. `opts.mcp`: also the MCP tools of
--- the sandbox root (this starts the servers its `.mcp.json` names). Returns the view: `buf`,
--- `done`, then `result` (a ToolsResult) or `error`.
---@param opts? { mcp?: boolean, sandbox_root?: string }
function M.tools(opts)
  opts = opts or {}
  local params = vim.empty_dict()
  if opts.mcp then
    params = { sandboxRoot = opts.sandbox_root or resolve_sandbox_root() }
  end
  local view = new_view('tools', 'cleveragents tools · asking the daemon…')
  return request_view(view, 'cleveragents/tools', params, describe_tools)
end

--- List runs from the history, newest first; <CR> on one shows it. Returns the view.
---@param opts? { limit?: integer, offset?: integer }
function M.runs(opts)
  opts = opts or {}
  local params = { limit = opts.limit or 50, offset = opts.offset or 0 }
  local view = new_view('runs', 'cleveragents runs · asking the daemon…')
  vim.keymap.set('n', '<CR>', function()
    M.show_run()
  end, { buffer = view.buf, desc = 'cleveragents: show the run on this line' })
  return request_view(view, 'cleveragents/runs', params, function(result)
    return describe_runs(view.buf, result)
  end)
end

-- The run named, else the one on the cursor's line of a runs list, else the current buffer's
-- run, else the latest; nil when there is none.
local function chosen_run_id(run_id)
  if run_id and run_id ~= '' then
    return run_id
  end
  local ids = listed_runs[vim.api.nvim_get_current_buf()]
  local listed = ids and ids[vim.api.nvim_win_get_cursor(0)[1]]
  if listed then
    return listed
  end
  local run = M.current_run()
  return run and run.id
end

--- Show one run from the history (default: the run on the cursor's line of a runs list, else
--- the current buffer's run, else the latest). Returns the view (`result`: a RunDetail).
---@param run_id? string
function M.show_run(run_id)
  run_id = chosen_run_id(run_id)
  if not run_id then
    vim.notify('cleveragents: no run to show', vim.log.levels.WARN)
    return nil
  end
  local view = new_view('history/' .. run_id, 'cleveragents run ' .. run_id .. ' · reading…')
  return request_view(view, 'cleveragents/getRun', { runId = run_id }, describe_stored_run)
end

--- Put a run's folder back as it was before the run, or before its iteration `opts.iteration`
--- (a restore's id undoes that restore). Lists the files that will change in a
--- `cleveragents://restore/<runId>` buffer and asks with `vim.ui.select` (unless
--- `opts.confirm == false`), then restores. `opts.dry_run` only lists. Default run: the one on
--- the cursor's line of a runs list, else the current buffer's, else the latest. Returns the
--- view: `done`, then `result` (the RestoreResult), `error`, or `declined`.
---@param run_id? string
---@param opts? { iteration?: integer, confirm?: boolean, dry_run?: boolean }
function M.restore(run_id, opts)
  opts = opts or {}
  run_id = chosen_run_id(run_id)
  if not run_id then
    vim.notify('cleveragents: no run to restore', vim.log.levels.WARN)
    return nil
  end
  local title = restore_title(run_id, opts.iteration)
  local view = new_view('restore/' .. run_id, title .. ' · asking the daemon…')
  local params = { runId = run_id, iteration = opts.iteration, dryRun = true }
  local function fail(d_err)
    view.error = error_message(d_err)
    fill_view(view, { title, '✗ ' .. view.error })
    view.done = true
  end
  with_daemon(function(d, why)
    if not d then
      return fail(why)
    end
    d.rpc.request('cleveragents/restore', params, function(err, preview)
      if err then
        return fail(err)
      end
      local changed = preview.changedFiles or {}
      local lines = { title .. ' · sandbox ' .. preview.sandboxRoot }
      if #changed == 0 then
        view.result = preview
        fill_view(view, vim.list_extend(lines, { 'nothing to restore: the files are as they were' }))
        view.done = true
        return
      end
      lines[#lines + 1] = 'will change ' .. plural(#changed, 'file') .. ':'
      vim.list_extend(lines, change_lines(changed))
      fill_view(view, lines)
      if opts.dry_run then
        view.result = preview
        view.done = true
        return
      end
      local function restore()
        d.rpc.request('cleveragents/restore', { runId = run_id, iteration = opts.iteration }, function(err2, done)
          if err2 then
            return fail(err2)
          end
          view.result = done
          local after = { title .. ' · sandbox ' .. done.sandboxRoot }
          after[#after + 1] = 'restored ' .. plural(#done.changedFiles, 'file') .. ':'
          vim.list_extend(after, change_lines(done.changedFiles))
          for _, path in ipairs(done.kept or {}) do
            after[#after + 1] = '  kept ' .. path .. ': an ignored or too-large file is in the way'
          end
          if not is_null(done.restoreId) then
            after[#after + 1] = 'undo this restore: :CleverAgentsRestore ' .. done.restoreId
          end
          fill_view(view, after)
          view.done = true
        end)
      end
      if opts.confirm == false then
        return restore()
      end
      vim.ui.select({ 'restore', 'cancel' }, {
        prompt = string.format('cleveragents: restore %s in %s?', plural(#changed, 'file'), preview.sandboxRoot),
        kind = 'cleveragents_restore',
        format_item = function(item)
          return item == 'restore' and 'Restore these files' or 'Cancel'
        end,
      }, function(choice)
        if choice == 'restore' then
          return restore()
        end
        view.declined = true
        fill_view(view, vim.list_extend(vim.deepcopy(lines), { 'not restored: nothing was changed' }))
        view.done = true
      end)
    end)
  end)
  return view
end

--- Shut the daemon down (its runs are cancelled). `on_exit(code, signal)` runs when it has
--- gone; `wait_ms` blocks until then (at most that long).
---@param opts? { on_exit?: fun(code: integer, signal: integer), wait_ms?: integer }
function M.stop(opts)
  opts = opts or {}
  local d = daemon
  if not d then
    if opts.on_exit then
      opts.on_exit(0, 0)
    end
    return
  end
  daemon = nil -- runs from now on start a new daemon
  local gone = false
  table.insert(d.on_exit, function(code, signal)
    gone = true
    if opts.on_exit then
      opts.on_exit(code, signal)
    end
  end)
  if d.ready and not d.rpc.is_closing() then
    d.rpc.request('shutdown', nil, function()
      d.rpc.notify('exit', nil)
    end)
  else
    d.rpc.terminate()
  end
  if opts.wait_ms then
    vim.wait(opts.wait_ms, function()
      return gone
    end, 20)
  end
end

return M
