import os, requests
from dotenv import load_dotenv
load_dotenv()
requests.post('https://api.crm.example.com/contacts', json=[], headers={'X-Key': os.getenv('CRM_KEY')})
